"""The demo workspace: the Acme Support app runs, and every demo conversation is a recording of it.

The app and its conversations are read back through the MCP tools, conversations checked against the
seed's JSON Schema. What the agents said, which tools they called and what those answered, and where
the conversation was handed over come from the runtime; the tests check them against the scripts, the
app's tools called directly, and the bundled dataset.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from sqlalchemy import select
from typer.testing import CliRunner

from convener.auth.caller import LOCAL_USER, Caller
from convener.auth.keys import ApiKeys
from convener.ces.runtime.toolbox import as_response
from convener.ces.session_models import RunSessionRequest
from convener.chat.tables import links, memberships, messages, spaces, users
from convener.cli import app as cli
from convener.config import Settings
from convener.demo import APP, load_demo, tools
from convener.demo.chat import install_chat
from convener.demo.loader import app_yaml, expected_export, scripts
from convener.outside.callables import registered_specs
from convener.server import mcp_servers
from convener.services import Services
from tests.conftest import BACKENDS, demo_services, demo_summary
from tests.e2e.conftest import (
    EVALUATION_VALIDATOR,
    MESSAGES_VALIDATOR,
    assert_matches,
    call_json,
    conversation,
    error_text,
    listed,
    structured,
    timestamp_nanos,
)

pytestmark = pytest.mark.anyio

Json = dict[str, Any]
PARENT = str(APP)
PYTHON_TOOLS = {"lookup_order", "list_customer_orders", "update_delivery_address", "check_refund_eligibility",
                "create_refund"}
CLIENT_TOOLS = {"confirm_identity"}

# What each script makes the app do: the tools called and the agents handed over to, in order, and
# whether the customer's goodbye ended the session. Written from the app's rules, not from a recording.
CHECK, CONFIRM, REFUND = "check_refund_eligibility", "confirm_identity", "create_refund"
EXPECTED: dict[str, tuple[list[str], list[str], bool]] = {
    "demo-001": (["lookup_order"], ["orders", "triage"], True),
    "demo-002": (["lookup_order"], ["orders", "triage"], True),
    "demo-003": (["lookup_order", "lookup_order"], ["orders", "triage"], False),
    "demo-004": ([CHECK, CONFIRM, REFUND], ["refunds", "triage"], True),
    "demo-005": ([CHECK], ["refunds", "triage"], True),
    "demo-006": ([CHECK, "lookup_order"], ["refunds", "triage", "orders", "triage"], False),
    "demo-007": ([CHECK, CONFIRM], ["refunds", "triage"], True),
    "demo-008": ([CHECK, CONFIRM, REFUND], ["refunds", "triage"], False),
    "demo-009": (["lookup_order", "update_delivery_address"], ["orders", "triage"], True),
    "demo-010": (["lookup_order"], ["orders", "triage"], True),
    "demo-011": (["list_customer_orders", "lookup_order"], ["orders"], False),
    "demo-012": (["lookup_order"], ["orders", "triage"], True),
    "demo-013": ([], [], True),
    "demo-014": (["lookup_order", CHECK, CONFIRM, REFUND], ["orders", "refunds", "triage"], True),
    "demo-015": (["lookup_order"], ["orders", "triage"], True),
    "demo-016": ([CHECK], ["refunds", "triage"], False),
    "demo-017": (["lookup_order", CHECK], ["orders", "refunds"], False),
    "demo-018": ([CHECK, CONFIRM, REFUND], [], False),
    "demo-019": (["lookup_order"], ["triage"], False),
    "demo-020": ([CHECK], ["refunds"], False),
}


async def all_conversations(client: Client, **arguments: Any) -> list[Json]:
    """Every conversation of the demo app, across list_conversations pages, each page schema-checked."""
    found: list[Json] = []
    token = None
    while True:
        page = listed(await client.call_tool("list_conversations", {
            "parent": PARENT, "pageSize": 7, **arguments, **({"pageToken": token} if token else {}),
        }))
        found.extend(page.get("conversations", []))
        token = page.get("nextPageToken")
        if not token:
            return sorted(found, key=lambda c: c["name"])


async def get_conversation(client: Client, conversation_id: str) -> Json:
    """A conversation of the demo app, checked against the seed's Conversation schema."""
    name = f"{PARENT}/conversations/{conversation_id}"
    return conversation(await client.call_tool("get_conversation", {"name": name}))


async def by_id(client: Client, tool: str, collection: str) -> dict[str, Json]:
    """The app's agents or tools by ID."""
    parts = (await call_json(client, tool, {"parent": PARENT}))[collection]
    return {short(part["name"]): part for part in parts}


@pytest.fixture(params=BACKENDS)
def loaded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    """A store of its own in which the demo is loaded: a copy of the demo this test process loaded once."""
    with demo_services(request.param, tmp_path / "loaded") as services:
        yield services


@pytest.fixture
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    """An MCP client in-process to /mcp, as the local user, on the test's store: the loaded demo when the
    test takes ``loaded``, otherwise a fresh store."""
    services: Services = request.getfixturevalue("loaded" if "loaded" in request.fixturenames else "services")
    async with Client(mcp_servers(services)["/mcp"]) as connected:
        yield connected


@pytest.fixture
async def demo(loaded: Services, client: Client) -> dict[str, Json]:
    """The demo loaded; each conversation read with get_conversation, by ID."""
    return {script.id: await get_conversation(client, script.id) for script in scripts()}


def chunks(turn: Json, role: str) -> Iterator[Json]:
    for message in turn.get("messages", []):
        if message["role"] == role:
            yield from message["chunks"]


def every_chunk(body: Json, role: str) -> Iterator[Json]:
    for turn in body["turns"]:
        yield from chunks(turn, role)


def short(name: str) -> str:
    return name.rsplit("/", 1)[1]


def span_paths(span: Json, above: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Json]]:
    path = (*above, span["name"])
    yield path, span
    for child in span.get("childSpans", []):
        yield from span_paths(child, path)


# -- the app ---------------------------------------------------------------------------------------


async def test_the_demo_app_its_agents_and_tools_exist(loaded: Services, client: Client) -> None:
    summary = demo_summary(loaded.database.dialect)

    assert summary.startswith(f"{PARENT}: app imported, 10 evaluations (14 written; ran them in {PARENT}/evaluationRuns/")
    assert summary.splitlines()[0].endswith(f"), {len(scripts())} conversations ({len(scripts())} new)")
    app = await call_json(client, "get_app", {"name": PARENT})
    assert app["displayName"] == "Acme Support" and app["description"]
    assert app["rootAgent"] == f"{PARENT}/agents/triage"
    assert app["languageSettings"] == {"defaultLanguageCode": "en-US"}
    declared = {v["name"]: v["schema"] for v in app["variableDeclarations"]}
    assert declared["customer_tier"]["default"] == "standard" and "customer_id" in declared

    agents = await by_id(client, "list_agents", "agents")
    assert set(agents) == {"triage", "orders", "refunds"}
    assert all("playbookAgent" in agent for agent in agents.values())
    assert agents["triage"]["childAgents"] == [f"{PARENT}/agents/orders", f"{PARENT}/agents/refunds"]
    assert {short(t) for t in agents["refunds"]["tools"]} == {CHECK, CONFIRM, REFUND}

    listed_tools = await by_id(client, "list_tools", "tools")
    assert set(listed_tools) == PYTHON_TOOLS | CLIENT_TOOLS
    for tool_id in PYTHON_TOOLS:
        python = listed_tools[tool_id]["pythonFunction"]
        assert python["entryPoint"] == f"convener.demo.tools:{tool_id}"
        assert python["description"] and listed_tools[tool_id]["displayName"] == tool_id
    assert listed_tools["confirm_identity"]["clientFunction"]["name"] == "confirm_identity"


def test_the_python_tools_have_typed_parameters_and_docstrings() -> None:
    for tool_id in PYTHON_TOOLS:
        function = getattr(tools, tool_id)
        assert function.__doc__ and len(function.__doc__.split()) > 10, tool_id
        hints = {name for name in function.__annotations__ if name != "return"}
        assert hints and hints == set(function.__code__.co_varnames[: function.__code__.co_argcount]), tool_id


async def test_the_demo_yaml_round_trips_through_export_app(loaded: Services, client: Client) -> None:
    exported = (await call_json(client, "export_app", {"name": PARENT}))["appContent"]

    assert yaml.safe_load(exported) == expected_export(yaml.safe_load(app_yaml()))
    assert (await call_json(client, "export_app", {"name": PARENT}))["appContent"] == exported


async def test_the_exported_demo_imports_as_another_app(loaded: Services, client: Client) -> None:
    exported = (await call_json(client, "export_app", {"name": PARENT}))["appContent"]

    await call_json(client, "import_app", {"parent": "projects/demo/locations/global", "appId": "copy",
                                           "appContent": exported})

    copied = (await call_json(client, "export_app", {"name": "projects/demo/locations/global/apps/copy"}))
    assert yaml.safe_load(copied["appContent"]) == yaml.safe_load(exported)


async def test_a_new_session_against_the_demo_app_runs(loaded: Services, client: Client) -> None:
    order = next(o for o in tools.dataset()["orders"] if o["id"] == "AC-1001")

    response = await call_json(client, "run_session", {
        "config": {"session": f"{PARENT}/sessions/mine"}, "inputs": [{"text": "where is order AC-1001"}],
    })

    texts = [output["text"] for output in response["outputs"] if "text" in output]
    assert texts == [f"Order AC-1001 ({order['items'][0]['name']}) was delivered on {order['deliveredOn']}."]
    recorded = await get_conversation(client, "mine")
    agent_side = list(every_chunk(recorded, "agent"))
    transfer = {"targetAgent": f"{PARENT}/agents/orders", "displayName": "Orders"}
    assert agent_side[0] == {"agentTransfer": transfer}
    assert agent_side[1]["toolCall"]["args"] == {"order_id": "AC-1001"}
    assert agent_side[2]["toolResponse"]["response"]["output"]["status"] == order["status"]


async def test_a_new_session_refunds_after_the_client_tool(loaded: Services, client: Client) -> None:
    session = {"session": f"{PARENT}/sessions/refund-by-hand"}

    asked = await call_json(client, "run_session", {"config": session, "inputs": [
        {"text": "I'd like a refund for order AC-1010"}]})
    (call,) = [c for o in asked["outputs"] if "toolCalls" in o for c in o["toolCalls"]["toolCalls"]]
    answer = {"id": call["id"], "response": {"output": {"verified": True}}}
    done = await call_json(client, "run_session", {"config": session, "inputs": [
        {"toolResponses": {"toolResponses": [answer]}}]})

    assert call["tool"] == f"{PARENT}/tools/confirm_identity"
    assert call["args"] == {"order_id": "AC-1010", "amount": 16.0}
    assert any("Refund RF-1010 of $16.00" in o.get("text", "") for o in done["outputs"])


def test_a_turn_reports_what_happens_as_it_happens(loaded: Services) -> None:
    heard: list[tuple[float, float | None, str | None]] = []
    request = RunSessionRequest.model_validate({"config": {"session": f"{PARENT}/sessions/heard"},
                                                "inputs": [{"text": "where is order AC-1001"}]})

    loaded.runtime.sessions.run(request, LOCAL_USER, lambda done, total, text: heard.append((done, total, text)))

    assert heard == [(1.0, None, "transferred to Orders"), (2.0, None, "tool call lookup_order"),
                     (3.0, None, "tool response lookup_order"), (4.0, None, "variables updated: last_order")]


def test_the_demo_app_names_only_registered_callables() -> None:
    """The demo needs no operator setting: its tools register themselves, and only they do."""
    document = yaml.safe_load(app_yaml())
    named = {tool["pythonFunction"]["entryPoint"] for tool in document["tools"].values() if "pythonFunction" in tool}
    assert named and named <= registered_specs()


# -- the conversations -----------------------------------------------------------------------------


async def test_every_script_is_listed_as_a_conversation(loaded: Services, client: Client) -> None:
    listed = await all_conversations(client)
    # The demo's evaluation run recorded its replays too, as conversations of source EVAL named eval-….
    replays = [c for c in listed if short(c["name"]).startswith("eval-")]
    assert replays and {c["source"] for c in replays} == {"EVAL"}
    found = {short(c["name"]): c for c in listed if c not in replays}

    assert list(found) == [script.id for script in scripts()] == sorted(EXPECTED)
    assert 16 <= len(found) <= 24
    for script in scripts():
        body = found[script.id]
        assert body["turnCount"] == len(body["turns"]) == len(script.turns), script.id
        assert body["source"] == script.source.value
        assert body["entryAgent"] == f"{PARENT}/agents/{script.entry_agent or 'triage'}"
        assert body["languageCode"] == "en-US"
        assert body == await get_conversation(client, script.id)
    sources = [c["source"] for c in found.values()]
    assert sources.count("LIVE") > len(sources) / 2 and {"SIMULATOR", "EVAL"} <= set(sources)
    evals = await all_conversations(client, filter="source = EVAL")
    assert [short(c["name"]) for c in evals if not short(c["name"]).startswith("eval-")] == [
        s.id for s in scripts() if s.source.value == "EVAL"]


async def test_the_user_side_is_the_scripted_input(demo: dict[str, Json]) -> None:
    for script in scripts():
        for turn, inputs in zip(demo[script.id]["turns"], script.turns, strict=True):
            user = list(chunks(turn, "user"))
            assert len(user) == len(inputs), script.id
            for chunk, item in zip(user, inputs, strict=True):
                if item.text is not None or item.dtmf is not None:
                    assert chunk == {"text": item.text if item.text is not None else item.dtmf}
                elif item.event is not None:
                    assert chunk["payload"]["event"] == item.event.event
                elif item.variables is not None:
                    assert chunk == {"updatedVariables": item.variables}
                elif item.image is not None:
                    assert chunk["image"]["altText"] == item.image.alt_text
                    assert base64.b64decode(chunk["image"]["data"]).startswith(b"\x89PNG\r\n\x1a\n")
                else:
                    assert "toolResponse" in chunk, script.id
    kinds = {kind for body in demo.values() for kind in body["inputTypes"]}
    assert kinds == {"INPUT_TYPE_TEXT", "INPUT_TYPE_EVENT", "INPUT_TYPE_VARIABLES", "INPUT_TYPE_IMAGE",
                     "INPUT_TYPE_TOOL_RESPONSE"}
    assert any(item.dtmf for script in scripts() for turn in script.turns for item in turn)


async def test_agents_call_the_expected_tools_and_hand_over_where_expected(demo: dict[str, Json]) -> None:
    for conversation_id, (tools_called, transfers, _) in EXPECTED.items():
        agent = list(every_chunk(demo[conversation_id], "agent"))
        called = [short(c["toolCall"]["tool"]) for c in agent if "toolCall" in c]
        assert called == tools_called, conversation_id
        assert [short(c["agentTransfer"]["targetAgent"]) for c in agent if "agentTransfer" in c] == transfers
        assert any("text" in c for c in agent), conversation_id
    texts = [c["text"] for body in demo.values() for c in every_chunk(body, "agent") if "text" in c]
    assert not [text for text in texts if "something went wrong" in text]
    assert any(text.startswith("Sorry, I didn't catch that") for text in texts), "the fallback"
    assert any(text.startswith("I couldn't find order AC-1099") for text in texts), "a tool's error"


async def test_tool_responses_are_what_the_tools_answer(demo: dict[str, Json]) -> None:
    """Each python tool's recorded response is what calling the tool with the recorded arguments gives,
    and each client tool call is answered by the user's next turn, under the call's ID."""
    for conversation_id, body in demo.items():
        pending: dict[str, Json] = {}
        for turn in body["turns"]:
            for chunk in chunks(turn, "user"):
                if "toolResponse" in chunk:
                    call = pending.pop(chunk["toolResponse"]["id"])
                    assert short(call["tool"]) in CLIENT_TOOLS
                    assert chunk["toolResponse"]["tool"] == call["tool"]
            assert not pending, f"{conversation_id}: a client tool call was not answered in the next turn"
            for chunk in chunks(turn, "agent"):
                if "toolCall" in chunk:
                    pending[chunk["toolCall"]["id"]] = chunk["toolCall"]
                elif "toolResponse" in chunk:
                    call = pending.pop(chunk["toolResponse"]["id"])
                    assert chunk["toolResponse"]["tool"] == call["tool"]
                    assert short(call["tool"]) in PYTHON_TOOLS
                    direct = as_response(getattr(tools, short(call["tool"]))(**call["args"]))
                    assert chunk["toolResponse"]["response"] == direct, conversation_id
        assert not pending, conversation_id
    responses = [c["toolResponse"]["response"] for body in demo.values() for c in every_chunk(body, "agent")
                 if "toolResponse" in c]
    assert any("error" in r for r in responses) and any("output" in r for r in responses)


async def test_turns_have_span_trees_of_agents_and_their_tools(demo: dict[str, Json]) -> None:
    paths: set[tuple[str, ...]] = set()
    for conversation_id, body in demo.items():
        for turn in body["turns"]:
            root = turn["rootSpan"]
            assert root["name"] == "TURN" and root["childSpans"], conversation_id
            assert {child["name"] for child in root["childSpans"]} == {"AGENT"}
            tool_spans = [span for path, span in span_paths(root) if path[-1] == "TOOL"]
            runs = [c["toolResponse"] for c in chunks(turn, "agent") if "toolResponse" in c]
            assert [span["attributes"]["tool"] for span in tool_spans] == [r["tool"] for r in runs]
            for path, span in span_paths(root):
                paths.add(path)
                assert timestamp_nanos(span["startTime"]) <= timestamp_nanos(span["endTime"])
                assert "duration" in span
                assert "errorInfo" not in span.get("attributes", {}), (conversation_id, path)
    assert paths == {("TURN",), ("TURN", "AGENT"), ("TURN", "AGENT", "TOOL")}


async def test_goodbyes_end_their_sessions(demo: dict[str, Json], client: Client) -> None:
    for conversation_id, (_, _, ended) in EXPECTED.items():
        if not ended:
            continue
        result = await client.call_tool("run_session", {
            "config": {"session": f"{PARENT}/sessions/{conversation_id}"},
            "inputs": [{"text": "hello again"}],
        })
        assert "has ended" in error_text(result, "FAILED_PRECONDITION")
    ongoing = await call_json(client, "run_session", {
        "config": {"session": f"{PARENT}/sessions/demo-011"}, "inputs": [{"text": "thanks, bye"}],
    })
    assert any("endSession" in output for output in ongoing["outputs"])


# -- loading ---------------------------------------------------------------------------------------


async def test_loading_twice_changes_nothing(loaded: Services, client: Client) -> None:
    before = await all_conversations(client)
    app = await call_json(client, "get_app", {"name": PARENT})
    agents = await call_json(client, "list_agents", {"parent": PARENT})

    summary = load_demo(loaded)

    app_line, chat_line, knowledge_line, analytics_line = summary.splitlines()
    assert app_line == f"{PARENT}: app unchanged, 10 evaluations (0 written), {len(scripts())} conversations (0 new)"
    assert re.fullmatch(r"chat: 5 conversations, \d+ messages \(0 new\); keys: users/ana cnv_\S+ users/ben cnv_\S+"
                        r" \(the same as last time; .*\)", chat_line)
    assert re.match(r"knowledge: convener-docs from \S+/docs: 0 added, 0 updated, \d+ unchanged", knowledge_line)
    assert analytics_line.startswith("analytics: source demo (8 tables) and data agent demo-data")
    assert await all_conversations(client) == before
    assert await call_json(client, "get_app", {"name": PARENT}) == app
    assert await call_json(client, "list_agents", {"parent": PARENT}) == agents


async def test_loading_again_replays_a_deleted_conversation(loaded: Services, client: Client) -> None:
    name = f"{PARENT}/conversations/demo-004"
    before = await get_conversation(client, "demo-004")
    await call_json(client, "delete_conversation", {"name": name})

    summary = load_demo(loaded)

    assert summary.splitlines()[0].endswith(f"{len(scripts())} conversations (1 new)")
    after = await get_conversation(client, "demo-004")
    assert after["turnCount"] == before["turnCount"]
    agent_side = [[list(chunks(turn, "agent")) for turn in body["turns"]] for body in (before, after)]
    assert agent_side[0] == agent_side[1]


async def test_loading_again_keeps_turns_added_to_a_demo_session(loaded: Services, client: Client) -> None:
    await call_json(client, "run_session", {
        "config": {"session": f"{PARENT}/sessions/demo-011"}, "inputs": [{"text": "Do you ship to Canada?"}],
    })
    continued = await get_conversation(client, "demo-011")

    summary = load_demo(loaded)

    assert summary.splitlines()[0].endswith("(0 new)")
    assert await get_conversation(client, "demo-011") == continued
    assert continued["turnCount"] == len(next(s for s in scripts() if s.id == "demo-011").turns) + 1


async def test_the_web_deployment_chose_the_version_its_conversations_ran(loaded: Services, client: Client) -> None:
    web = await call_json(client, "get_deployment", {"name": f"{PARENT}/deployments/web"})
    assert web["appVersion"] == f"{PARENT}/versions/v1" and web["channelProfile"]["channelType"] == "WEB_UI"
    through = await all_conversations(client, filter=f'deployment = "{web["name"]}"')
    assert [short(c["name"]) for c in through] == sorted(s.id for s in scripts() if s.deployment == "web")
    assert len(through) >= 2
    for conversation in through:
        chosen = await call_json(client, "get_deployment", {"name": conversation["deployment"]})
        assert conversation["appVersion"] == chosen["appVersion"]
    others = await all_conversations(client, filter='deployment = ""')
    assert others and all("deployment" not in c for c in others)


async def test_a_changed_app_definition_is_imported_again(loaded: Services, client: Client) -> None:
    await call_json(client, "update_app", {"app": {"name": PARENT, "displayName": "Renamed"},
                                           "updateMask": "displayName"})

    summary = load_demo(loaded)

    assert summary.startswith(f"{PARENT}: app imported,") and summary.splitlines()[0].endswith("(0 new)")
    assert (await call_json(client, "get_app", {"name": PARENT}))["displayName"] == "Acme Support"


@pytest.mark.slow
def test_demo_cli_command_loads_then_changes_nothing_and_reissues_keys_when_asked(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the command says of the app, the evaluations and the chat does not hang on semantic search, and
    # loading the embedding model in this test process would cost most of its time.
    monkeypatch.setenv("CONVENER_KNOWLEDGE_EMBEDDINGS", "off")
    runner = CliRunner()
    arguments = ["demo", "--database-url", database_url, "--data-dir", str(tmp_path / "cli")]

    first = runner.invoke(cli, arguments)
    second = runner.invoke(cli, arguments)
    reissued = runner.invoke(cli, [*arguments, "--reissue-keys"])

    assert first.exit_code == 0, first.output
    assert "app imported, 10 evaluations (14 written; ran them in " in first.output
    assert f"{len(scripts())} conversations ({len(scripts())} new)" in first.output
    assert second.exit_code == 0, second.output
    assert f"app unchanged, 10 evaluations (0 written), {len(scripts())} conversations (0 new)" in second.output
    keys = [CHAT_SUMMARY.search(result.output) for result in (first, second, reissued)]
    assert keys[0] and keys[1] and keys[2], reissued.output
    assert keys[1]["ana"] == keys[0]["ana"] and keys[1]["ben"] == keys[0]["ben"]
    assert keys[2]["keys"] == "new" and {keys[2]["ana"], keys[2]["ben"]}.isdisjoint({keys[0]["ana"], keys[0]["ben"]})


# -- the dataset's rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(("order_id", "eligible", "why"), [
    ("AC-1001", True, "within the 60-day window"),
    ("AC-1010", True, "within the 30-day window"),
    ("AC-1008", True, "within the 60-day window"),  # 44 days: only a gold customer's window is that long
    ("AC-1004", False, "refunds are possible within 60 days"),
    ("AC-1002", False, "not been delivered yet"),
    ("AC-1006", False, "already refunded"),
    ("AC-1009", False, "final sale"),
])
def test_refund_eligibility_follows_the_rules(order_id: str, eligible: bool, why: str) -> None:
    verdict = tools.check_refund_eligibility(order_id)

    assert verdict["eligible"] is eligible and why in verdict["reason"]
    refund = tools.create_refund(order_id, 1.0)
    assert ("refundId" in refund) is eligible
    if eligible:
        assert refund == tools.create_refund(order_id, 1.0) and refund["refundId"] == "RF-" + order_id[3:]


def test_tools_read_order_numbers_leniently_and_refuse_what_they_cannot_do() -> None:
    assert tools.lookup_order("ac-1007")["orderId"] == tools.lookup_order("1007")["orderId"] == "AC-1007"
    assert tools.lookup_order("AC-9999") == {"error": "there is no order AC-9999"}
    assert "error" in tools.lookup_order("not a number")
    changed = tools.update_delivery_address("AC-1003", " 1 Main St,\n Springfield ")
    assert changed["address"] == "1 Main St, Springfield"
    assert "error" in tools.update_delivery_address("AC-1005", "1 Main St, Springfield")
    assert "error" in tools.create_refund("AC-1001", 1_000.0)
    assert [o["orderId"] for o in tools.list_customer_orders("C-201")] == ["AC-1009", "AC-1001"]
    assert tools.list_customer_orders("C-999") == []


# -- the demo's evaluations ------------------------------------------------------------------------


async def test_the_demo_evaluations_ran_and_fail_for_the_reasons_they_state(loaded: Services, client: Client) -> None:
    listed = await call_json(client, "list_evaluations", {"parent": PARENT, "orderBy": "name"})
    outcomes = {e["name"].rsplit("/", 1)[1]: e["lastCompletedResult"]["evaluationStatus"] for e in listed["evaluations"]}
    assert outcomes == {
        "cancelled-order-status": "FAIL", "gift-card-refund": "FAIL", "order-status-delivered": "PASS",
        "refund-amount-wrong": "FAIL", "refund-confirmed-on-phone": "PASS", "shipping-to-canada": "PASS",
        "track-in-two-turns": "PASS",
        "scenario-change-address": "PASS", "scenario-refund-too-late": "PASS", "scenario-track-order": "PASS",
    }
    for evaluation in listed["evaluations"]:
        assert_matches(EVALUATION_VALIDATOR, evaluation)
        result = evaluation["lastCompletedResult"]
        if "scenario" in evaluation:
            # Five repetitions each, the demo's two personas taking turns, every one completing the task.
            scenario = result["scenarioResult"]
            assert scenario["taskCompleted"] is True and scenario["allExpectationsSatisfied"] is True
            assert result["persona"]["name"].startswith(f"{PARENT}/evaluationPersonas/")
            assert evaluation["evaluationDatasets"] == [f"{PARENT}/evaluationDatasets/scenarios"]
            version = evaluation["aggregatedMetrics"]["metricsByAppVersion"][0]
            assert (version["passCount"], version.get("failCount", 0)) == (5, 0)
            continue
        failed = [outcome["expectation"].get("note") for turn in result["goldenResult"]["turnReplayResults"]
                  for outcome in turn["expectationOutcome"] if outcome["outcome"] == "FAIL"]
        if result["evaluationStatus"] == "FAIL":
            assert failed and all(note and note.startswith("Expect_") for note in failed), (evaluation["name"], failed)
        else:
            assert not failed
        assert evaluation["evaluationDatasets"] == [f"{PARENT}/evaluationDatasets/regression"]
        assert evaluation["aggregatedMetrics"]["metricsByAppVersion"][0]["passCount"] + \
            evaluation["aggregatedMetrics"]["metricsByAppVersion"][0]["failCount"] == 1


async def test_the_demo_changelog_shows_the_edits_that_made_it(loaded: Services, client: Client) -> None:
    async def changelog() -> list[Json]:
        page = await call_json(client, "list_changelogs", {"parent": PARENT, "pageSize": 500, "orderBy": "create_time"})
        assert "nextPageToken" not in page
        entries: list[Json] = page["changelogs"]
        return entries

    entries = await changelog()
    made = [(entry["action"], entry["resourceType"]) for entry in entries]
    assert made[0] == ("Create", "App") and entries[0]["description"].startswith("App created by import_app: ")
    assert {d["name"] for d in entries[0]["dependentResources"]} >= {f"{PARENT}/agents/triage", f"{PARENT}/tools/lookup_order"}
    assert made.count(("Create", "Evaluation")) == 10 and made.count(("Create", "EvaluationDataset")) == 2
    assert made.count(("Create", "EvaluationPersona")) == 2
    # The version v1 and the web deployment pinned to it, made right after the app.
    assert made[1:3] == [("Create", "AppVersion"), ("Create", "Deployment")] and len(made) == 17
    assert [entry["sequenceNumber"] for entry in entries] == [str(n) for n in range(1, len(entries) + 1)]
    assert {entry["author"] for entry in entries} == {"users/local"}
    # Each demo result ran on the draft, after the newest change made before it started.
    listed = await call_json(client, "list_evaluations", {"parent": PARENT})
    for evaluation in listed["evaluations"]:
        result = evaluation["lastCompletedResult"]
        # (as instants: proto3 JSON writes 3, 6 or 9 fraction digits, so "….664Z" sorts after "….664107Z" as text)
        before = [entry for entry in entries
                  if timestamp_nanos(entry["createTime"]) <= timestamp_nanos(result["createTime"])]
        assert result["changelog"] == before[-1]["name"], evaluation["name"]
        assert (await call_json(client, "get_changelog", {"name": result["changelog"]}))["createTime"] == \
            result["changelogCreateTime"]
    load_demo(loaded)
    assert await changelog() == entries, "loading again changes nothing, so records nothing"


# -- the demo's chat -------------------------------------------------------------------------------

CHAT_SUMMARY = re.compile(r"chat: 5 conversations, (?P<messages>\d+) messages \((?P<new>\d+) new\); "
                          r"keys: users/ana (?P<ana>cnv_\S+) users/ben (?P<ben>cnv_\S+) \((?P<keys>[^)]+)\)")
CHAT_TABLES = (users, links, spaces, memberships, messages)


def chat_rows(services: Services) -> dict[str, list[Any]]:
    """Every row of the chat tables, in a comparable order."""
    with services.database.reading() as connection:
        return {table.name: sorted(tuple(map(str, row)) for row in connection.execute(select(table)).all())
                for table in CHAT_TABLES}


async def as_user(services: Services, principal: str) -> AsyncIterator[Client]:
    async with Client(mcp_servers(services, default_caller=Caller(principal))["/mcp"]) as connected:
        yield connected


@pytest.fixture
async def ana(services: Services) -> AsyncIterator[Client]:
    """Ana on MCP, the demo's chat imported (without the app, which the chat tests do not need)."""
    install_chat(services)
    async for connected in as_user(services, "users/ana"):
        yield connected


async def every_message(client: Client, conversation_id: str) -> list[Json]:
    found: list[Json] = []
    token = None
    while True:
        page = structured(await client.call_tool("list_messages", {
            "conversationId": conversation_id, "pageSize": 50, **({"pageToken": token} if token else {})}))
        assert_matches(MESSAGES_VALIDATOR, page)
        found.extend(page.get("messages", []))
        token = page.get("nextPageToken")
        if not token:
            return found


async def conversations_of(client: Client) -> dict[str, Json]:
    page = await call_json(client, "search_conversations", {"pageSize": 50})
    assert "nextPageToken" not in page
    return {c["displayName"]: c for c in page["conversations"]}


def test_the_demo_chat_imports_twice_without_a_change(services: Services) -> None:
    first = CHAT_SUMMARY.fullmatch(install_chat(services))
    rows = chat_rows(services)
    again = CHAT_SUMMARY.fullmatch(install_chat(services))

    assert first and again
    stored = len(rows["chat_messages"])
    assert 200 <= stored <= 400, "a few hundred messages"
    assert first["messages"] == first["new"] == again["messages"] == str(stored)
    assert again["new"] == "0"
    assert chat_rows(services) == rows
    assert {row[0] for row in rows["chat_users"]} == {"ana", "ben", "cy", "dana", "eli", "deploybot"}


async def test_ana_sees_her_conversations_and_not_incidents(ana: Client, services: Services) -> None:
    async for ben in as_user(services, "users/ben@acme.test"):
        bens = await conversations_of(ben)

    anas = await conversations_of(ana)

    assert {(name, c["conversationType"]) for name, c in anas.items()} == {
        ("general", "SPACE"), ("support-agent", "SPACE"), ("Ben Okafor", "DIRECT_MESSAGE"),
        ("Ben Okafor, Cy Park", "GROUP_CHAT"),
    }
    assert set(bens) == {"general", "support-agent", "incidents", "Ana Lima", "Ana Lima, Cy Park"}
    incidents = bens["incidents"]["conversationId"]
    result = await ana.call_tool("list_messages", {"conversationId": incidents})
    assert "does not exist or you are not a member" in error_text(result, "NOT_FOUND")
    found = await call_json(ana, "search_messages", {"searchParameters": {"keywords": ["INC-2041"]}})
    assert found["messages"] and all(m["messageId"].split("/messages/")[0] != incidents for m in found["messages"])


async def test_support_agent_is_markdown_with_threads_reactions_attachments_and_quotes(ana: Client) -> None:
    support = (await conversations_of(ana))["support-agent"]["conversationId"]

    found = await every_message(ana, support)

    assert 100 <= len(found) <= 200
    roots = {m["threadId"] for m in found if "threadId" in m and not m["threadedReply"]}
    replies = [m for m in found if m["threadedReply"]]
    assert len(roots) >= 10 and replies and {m["threadId"] for m in replies} <= roots
    bodies = "\n".join(m["plaintextBody"] for m in found)
    for markdown in ("**Playbook freeze**", "`create_refund`", "[#482](https://git.acme.test/", "@Ana Lima",
                     "\n- ✅ 4 passed", "\n> Boring release", "```\nconvener apps import"):
        assert markdown in bodies, markdown
    emoji = {r["emoji"] for m in found for r in m.get("reactionSummaries", [])}
    assert {"👍", "🎉", "🙌🏾", "🙏🏼", "👍🏿", "🤦🏽\u200d♂️"} <= emoji
    attachments = [a for m in found for a in m.get("attachments", [])]
    assert {a["source"] for a in attachments} == {"DRIVE_FILE", "UPLOADED_CONTENT"}
    assert [a["filename"] for a in attachments if "driveFileId" in a] == ["Acme refund policy v3"]
    quotes = {m["quotedMessageMetadata"]["quoteType"]: m["quotedMessageMetadata"]
              for m in found if "quotedMessageMetadata" in m}
    assert quotes["REPLY"]["sender"] == "Ben Okafor"
    assert quotes["REPLY"]["messageId"].startswith(f"{support}/messages/")
    assert quotes["FORWARD"]["forwardedMetadata"]["conversationDisplayName"] == "general"
    senders = {m["sender"]["userId"]: m["sender"] for m in found}
    assert senders["users/deploybot"] == {"userId": "users/deploybot", "displayName": "deploybot", "userType": "APP"}


async def test_the_private_message_is_stored_and_listed_to_no_one(ana: Client, services: Services) -> None:
    support = (await conversations_of(ana))["support-agent"]["conversationId"]
    async for ben in as_user(services, "users/ben"):
        seen_by_ben = await every_message(ben, support)

    seen_by_ana = await every_message(ana, support)
    searched = await call_json(ana, "search_messages", {"searchParameters": {"keywords": ["r-1027a"]}})

    with services.database.reading() as connection:
        private = connection.execute(select(messages).where(messages.c.private_viewer_id.is_not(None))).all()
    assert [(row.space_id, row.private_viewer_id, row.sender_id) for row in private] == [
        (support.removeprefix("spaces/"), "ana", "deploybot")]
    assert "Only visible to you" in private[0].body
    for seen in (seen_by_ana, seen_by_ben):
        assert not [m for m in seen if "Only visible to you" in m["plaintextBody"]]
    assert len(seen_by_ana) == len(seen_by_ben)
    assert searched.get("messages", []) == []


async def test_the_keys_load_demo_prints_act_as_the_demo_users(loaded: Services) -> None:
    keys = ApiKeys(loaded.database)
    first = CHAT_SUMMARY.search(demo_summary(loaded.database.dialect))
    assert first and first["keys"] == "new"
    assert keys.caller(first["ana"]) == Caller("users/ana", frozenset({"*"}))
    assert keys.caller(first["ben"]) == Caller("users/ben", frozenset({"*"}))
    async for client in as_user(loaded, "users/ana"):
        assert (await conversations_of(client)).keys() >= {"general", "support-agent"}


def test_loading_again_prints_the_same_keys(services: Services) -> None:
    first = CHAT_SUMMARY.search(install_chat(services))
    listed = [(key.key_id, key.principal) for key in ApiKeys(services.database).list()]

    again = CHAT_SUMMARY.search(install_chat(services))

    assert first and again
    assert (again["ana"], again["ben"]) == (first["ana"], first["ben"])
    assert again["keys"].startswith("the same as last time; convener demo --reissue-keys")
    assert [(key.key_id, key.principal) for key in ApiKeys(services.database).list()] == listed
    assert [key_id.startswith("demo-") for key_id, _ in listed] == [True, True], "labelled as the demo's"
    assert os.stat(services.settings.data_dir / "demo-keys.json").st_mode & 0o077 == 0, "the owner's only"


def test_reissuing_revokes_the_demo_keys_and_spares_the_operator_s(services: Services) -> None:
    keys = ApiKeys(services.database)
    first = CHAT_SUMMARY.search(install_chat(services))
    _, own = keys.create("users/ana", ("chat",))

    again = CHAT_SUMMARY.search(install_chat(services, reissue_keys=True))

    assert first and again and again["keys"] == "new"
    assert {again["ana"], again["ben"]}.isdisjoint({first["ana"], first["ben"]})
    assert keys.caller(first["ana"]) is None and keys.caller(first["ben"]) is None
    assert keys.caller(again["ana"]) == Caller("users/ana", frozenset({"*"}))
    assert keys.caller(own) == Caller("users/ana", frozenset({"chat"}))


def test_a_demo_key_revoked_or_forgotten_is_issued_again(services: Services) -> None:
    keys = ApiKeys(services.database)
    first = CHAT_SUMMARY.search(install_chat(services))
    assert first
    keys.revoke(next(key.key_id for key in keys.list() if key.principal == "users/ben"))

    after_revoke = CHAT_SUMMARY.search(install_chat(services))

    assert after_revoke and after_revoke["ana"] == first["ana"] and after_revoke["keys"] == "new for users/ben"
    assert keys.caller(after_revoke["ben"]) == Caller("users/ben", frozenset({"*"}))

    (services.settings.data_dir / "demo-keys.json").unlink()
    after_loss = CHAT_SUMMARY.search(install_chat(services))

    assert after_loss and after_loss["keys"] == "new" and keys.caller(first["ana"]) is None
    assert sorted(key.principal for key in keys.list()) == ["users/ana", "users/ben"], "stale demo keys revoked"


async def test_the_demo_answers_questions_about_convener_from_its_own_docs(loaded: Services, client: Client) -> None:
    answer = await call_json(client, "answer_query", {"query": "How do I import a Slack export?"})
    chunks = await call_json(client, "search_documents", {"query": "Slack export import", "pageSize": 3})

    assert answer["references"] and all(name.startswith("documents/") for name in answer["references"])
    assert any(name.endswith("/docs/chat.md") for name in answer["references"])
    assert "slack" in answer["answerText"].lower()
    assert chunks["results"][0]["parent"].endswith("/docs/chat.md")
    assert chunks["results"][0]["document"]["dataSource"] == "convener-docs"


async def test_the_demo_data_agent_answers_offline_with_a_chart(loaded: Services, client: Client) -> None:
    result = await client.call_tool("ask_data_agent", {"data_agent_id": "demo-data",
                                                       "user_query_with_context": "What is the average horsepower by origin?"})
    assert not result.is_error, result.content
    messages = (result.structured_content or {})["messages"]
    rows = next(m["systemMessage"]["data"]["result"]["data"] for m in messages
                if "result" in m.get("systemMessage", {}).get("data", {}))
    assert len(rows) == 3  # USA, Europe, Japan
    assert any("chart" in m.get("systemMessage", {}) for m in messages)
    assert result.content[-1].type == "image"
