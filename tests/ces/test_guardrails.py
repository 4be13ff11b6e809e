"""Guardrails and agent callbacks, end to end through the MCP tools: what they do to a turn, and the GUARDRAIL
and USER_CALLBACK spans the recorded turn carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client

from convener.config import Settings
from tests.ces.session_helpers import (
    APP,
    FIXTURES,
    agent,
    agent_chunks,
    agent_name,
    last,
    llm_settings,
    make_app,
    python_tool,
    run,
    texts,
    tool_name,
)
from tests.e2e.conftest import call_json, conversation, error_text
from tests.llm.fake_openai import FakeOpenAI

pytestmark = pytest.mark.anyio

SHOP = {
    "intents": [
        {"name": "order", "patterns": [r"order (?P<order_id>[A-Za-z]-\d)"], "steps": [
            {"callTool": {"tool": "lookup", "args": {"order_id": "{{ slots.order_id }}"}, "as": "order"}},
            {"when": "results.order.error is defined", "reply": "No order {{ slots.order_id }}."},
            {"when": "results.order.output is defined",
             "reply": "Order {{ results.order.output.orderId }} is {{ results.order.output.status }}."}]},
        {"name": "say", "patterns": [r"^say (?P<what>.+)"], "steps": [{"reply": "{{ slots.what }}"}]},
        {"name": "code", "keywords": ["code"], "steps": [{"reply": "The door code is 1234."},
                                                        {"reply": "Anything else?"}]},
    ],
    "fallback": [{"reply": "I can help with orders."}],
}
HUMAN = {"fallback": [{"reply": "A human will take it from here."}]}
POLITE = {"respondImmediately": {"responses": [{"text": "unused", "disabled": True},
                                               {"text": "Please keep it polite."}]}}


@pytest.fixture
def settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return llm_settings(database_url, tmp_path, fake_openai.base_url)


def guardrail_name(guardrail_id: str) -> str:
    return f"{APP}/guardrails/{guardrail_id}"


def fixture(name: str, **extra: Any) -> dict[str, Any]:
    """A Callback naming a test callable."""
    return {"entryPoint": f"{FIXTURES}:{name}", **extra}


async def guardrail(client: Client, guardrail_id: str, **definition: Any) -> dict[str, Any]:
    body = {"displayName": guardrail_id.title(), "enabled": True, **definition}
    return await call_json(client, "create_guardrail", {"parent": APP, "guardrailId": guardrail_id, "guardrail": body})


async def _shop(client: Client) -> None:
    await make_app(client)
    await python_tool(client, "lookup", "lookup_order")
    await agent(client, "human", playbookAgent=HUMAN)


async def shop_agent(client: Client, agent_id: str, *guardrails: str, **definition: Any) -> None:
    await agent(client, agent_id, playbookAgent=SHOP, tools=[tool_name("lookup")],
                guardrails=[guardrail_name(g) for g in guardrails], **definition)


async def say(client: Client, session: str, text: str, agent_id: str | None = None) -> dict[str, Any]:
    config = {"entryAgent": agent_name(agent_id)} if agent_id else {}
    return await run(client, session, {"text": text}, **config)


def root(response: dict[str, Any]) -> dict[str, Any]:
    span: dict[str, Any] = last(response)["diagnosticInfo"]["rootSpan"]
    return span


def spans(span: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The spans of a tree with this name, depth first."""
    found = [span] if span["name"] == name else []
    return found + [s for child in span.get("childSpans", []) for s in spans(child, name)]


def attributes(span: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [s.get("attributes", {}) for s in spans(span, name)]


def kinds(response: dict[str, Any]) -> list[str]:
    return [next(iter(chunk)) for chunk in agent_chunks(response)]


# -- content filters ---------------------------------------------------------------------------------------


async def test_content_filters_of_each_match_type_on_user_input(client: Client) -> None:
    await _shop(client)
    await guardrail(client, "simple", action=POLITE, contentFilter={
        "bannedContentsInUserInput": ["darn", "café"], "matchType": "SIMPLE_STRING_MATCH"})
    await guardrail(client, "word", action=POLITE, contentFilter={
        "bannedContents": ["darn it"], "matchType": "WORD_BOUNDARY_STRING_MATCH"})
    await guardrail(client, "regex", action=POLITE, contentFilter={
        "bannedContents": [r"\b(?:\d{4}[ -]){3}\d{4}\b"], "matchType": "REGEXP_MATCH"})
    await guardrail(client, "accents", action=POLITE, contentFilter={
        "bannedContents": ["creme brulee"], "matchType": "SIMPLE_STRING_MATCH", "disregardDiacritics": True})
    for guardrail_id in ("simple", "word", "regex", "accents"):
        await shop_agent(client, guardrail_id, guardrail_id)

    cases = [
        ("simple", "say darnit", True), ("simple", "say DARN", True), ("simple", "say hello", False),
        ("simple", "say CAFÉ au lait", True), ("simple", "say cafe au lait", False),
        ("word", "say oh darn it!", True), ("word", "say DARN IT", True), ("word", "say darn itself", False),
        ("regex", "say card 4111 1111 1111 1111 ok", True), ("regex", "say card 4111", False),
        ("accents", "say I love crème brûlée", True), ("accents", "say I love CREME BRULEE", True),
        ("accents", "say I love cream", False),
    ]
    for index, (guardrail_id, text, blocked) in enumerate(cases):
        response = await say(client, f"in-{index}", text, guardrail_id)
        expected = ["Please keep it polite."] if blocked else [text.removeprefix("say ")]
        assert texts(response) == expected, (guardrail_id, text)
        check, *on_reply = attributes(root(response), "GUARDRAIL")
        assert check["guardrail"] == guardrail_name(guardrail_id) and check["stage"] == "USER_INPUT"
        assert check["triggered"] is blocked, (guardrail_id, text)
        # bannedContents apply to replies too; bannedContentsInUserInput do not.
        checked_reply = not blocked and guardrail_id != "simple"
        assert [c["stage"] for c in on_reply] == (["AGENT_RESPONSE"] if checked_reply else []), (guardrail_id, text)
        agent_span = root(response)["childSpans"][0]
        if blocked:
            assert check["action"] == "respondImmediately" and "banned content" in check["reason"]
            assert "intent" not in agent_span["attributes"], "the agent did not run"
            assert [s["name"] for s in agent_span["childSpans"]] == ["GUARDRAIL"], "nor its response guardrails"
        else:
            assert agent_span["attributes"]["intent"] == "say"


async def test_content_filters_on_agent_responses_keep_the_tool_calls(client: Client) -> None:
    await _shop(client)
    await guardrail(client, "no-codes", contentFilter={"bannedContentsInAgentResponse": [r"\d{4}"],
                                                      "matchType": "REGEXP_MATCH"},
                    action={"respondImmediately": {"responses": [{"text": "I can't share codes."}]}})
    await guardrail(client, "no-status", contentFilter={"bannedContentsInAgentResponse": ["shipped"],
                                                       "matchType": "WORD_BOUNDARY_STRING_MATCH"},
                    action={"respondImmediately": {"responses": [{"text": "Your order is on its way."}]}})
    await shop_agent(client, "front", "no-codes", "no-status")

    code = await say(client, "out-1", "what is the code", "front")
    assert texts(code) == ["I can't share codes."], "both replies are replaced by the one response"
    assert kinds(code) == ["text"]
    (check,) = attributes(root(code), "GUARDRAIL")
    assert check["stage"] == "AGENT_RESPONSE" and check["triggered"] is True and '"\\d{4}"' in check["reason"]
    assert texts(await say(client, "out-2", "say 1234", "front")) == ["I can't share codes."], \
        "a response-only list does not check the input, but the reply"
    order = await say(client, "out-3", "order A-1", "front")
    assert texts(order) == ["Your order is on its way."]
    assert kinds(order) == ["toolCall", "toolResponse", "text"], "the tool call stays in the record"
    checks = attributes(root(order), "GUARDRAIL")
    assert [(c["guardrail"], c["triggered"]) for c in checks] == [
        (guardrail_name("no-codes"), False), (guardrail_name("no-status"), True)]
    assert [s["name"] for s in root(order)["childSpans"][0]["childSpans"]] == ["TOOL", "GUARDRAIL", "GUARDRAIL"]
    assert texts(await say(client, "out-4", "order B-2", "front")) == ["Order B-2 is processing."]


# -- code callbacks and actions ----------------------------------------------------------------------------


async def test_code_callback_guardrails_transfer_answer_and_fail_closed(client: Client) -> None:
    await _shop(client)
    await guardrail(client, "refunds", codeCallback={"beforeAgentCallback": fixture("guard_refunds")},
                    action={"transferAgent": {"agent": agent_name("human")}})
    await guardrail(client, "secrets", codeCallback={"afterAgentCallback": fixture("guard_secrets")})
    await guardrail(client, "crashy", codeCallback={"beforeAgentCallback": fixture("guard_crashes")}, action=POLITE)
    await call_json(client, "update_agent", {"agent": {"name": agent_name("human"), "guardrails": [
        guardrail_name("refunds")]}, "updateMask": "guardrails"})
    await shop_agent(client, "front", "refunds", "secrets")
    await shop_agent(client, "fragile", "crashy")

    moved = await say(client, "code-1", "I want a refund", "front")
    assert texts(moved) == ["A human will take it from here."]
    assert kinds(moved) == ["agentTransfer", "text"]
    assert agent_chunks(moved)[0]["agentTransfer"]["targetAgent"] == agent_name("human")
    front, human = root(moved)["childSpans"]
    (check,) = attributes(front, "GUARDRAIL")
    assert check == {"guardrail": guardrail_name("refunds"), "displayName": "Refunds", "stage": "USER_INPUT",
                     "entryPoint": f"{FIXTURES}:guard_refunds", "triggered": True, "reason": "refunds go to a human",
                     "action": "transferAgent"}
    assert spans(human, "GUARDRAIL") == [], "the guardrail sent the input there: it is not checked again"
    later = await say(client, "code-1", "another refund please")
    assert texts(later) == ["A human will take it from here."]
    (check,) = attributes(root(later), "GUARDRAIL")
    assert check["triggered"] is True and check["action"] == "transferAgent", "the human's own guardrail runs"

    secret = await say(client, "code-2", "what is the code", "front")
    assert texts(secret) == ["Sorry, I can't help with that."], "no action: the default response"
    checks = attributes(root(secret), "GUARDRAIL")
    assert [(c["stage"], c["triggered"]) for c in checks] == [("USER_INPUT", False), ("AGENT_RESPONSE", True)]
    assert checks[0]["reason"] == "no refund" and checks[1]["reason"] == "the reply gives away a code"
    assert checks[1]["action"] == "default"

    crashed = await say(client, "code-3", "hello", "fragile")
    assert texts(crashed) == ["Please keep it polite."], "a guardrail that cannot decide blocks"
    (check,) = attributes(root(crashed), "GUARDRAIL")
    assert check["triggered"] is True and check["errorInfo"]["code"] == "INTERNAL"
    assert "RuntimeError: the guard tripped over itself" in check["errorInfo"]["message"]
    assert texts(await say(client, "code-3", "hello again")) == ["Please keep it polite."], "the session goes on"


async def test_disabled_deleted_and_app_level_guardrails(client: Client) -> None:
    await _shop(client)
    banned = {"bannedContents": ["darn"], "matchType": "SIMPLE_STRING_MATCH"}
    await guardrail(client, "off", contentFilter=banned, action=POLITE, enabled=False)
    unset = await call_json(client, "create_guardrail", {"parent": APP, "guardrailId": "unset", "guardrail": {
        "displayName": "Unset", "contentFilter": banned, "action": POLITE}})
    assert "enabled" not in unset
    await shop_agent(client, "front", "off", "unset")
    assert texts(await say(client, "d-1", "say darn", "front")) == ["darn"]
    assert spans(root(await say(client, "d-1", "say darn")), "GUARDRAIL") == [], "disabled guardrails do not run"
    await call_json(client, "update_guardrail", {"guardrail": {"name": guardrail_name("unset"), "enabled": True},
                                                 "updateMask": "enabled"})
    assert texts(await say(client, "d-1", "say darn")) == ["Please keep it polite."]

    await call_json(client, "delete_guardrail", {"name": guardrail_name("unset")})
    gone = await say(client, "d-1", "say darn")
    assert texts(gone) == ["darn"]
    checks = attributes(root(gone), "GUARDRAIL")
    assert [(c["stage"], c["errorInfo"]["code"], c["triggered"]) for c in checks] == [
        ("USER_INPUT", "NOT_FOUND", False), ("AGENT_RESPONSE", "NOT_FOUND", False)], "a deleted guardrail is skipped"

    await guardrail(client, "app-wide", contentFilter={"bannedContentsInUserInput": ["darn", "refund"],
                                                       "matchType": "WORD_BOUNDARY_STRING_MATCH"},
                    action={"transferAgent": {"agent": agent_name("human")}})
    updated = await call_json(client, "update_app", {"app": {"name": APP, "guardrails": [guardrail_name("app-wide")]},
                                                     "updateMask": "guardrails"})
    assert updated["guardrails"] == [guardrail_name("app-wide")]
    await agent(client, "plain", playbookAgent=SHOP, tools=[tool_name("lookup")])
    moved = await say(client, "d-2", "say darn", "plain")
    assert texts(moved) == ["A human will take it from here."]
    assert [a["agent"] for a in attributes(root(moved), "AGENT")] == [agent_name("plain"), agent_name("human")]
    assert len(spans(root(moved), "GUARDRAIL")) == 1, "the app's guardrail checks an input once, not per agent"
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/d-2"}))
    (check,) = attributes(recorded["turns"][0]["rootSpan"], "GUARDRAIL")
    assert check["guardrail"] == guardrail_name("app-wide") and check["stage"] == "USER_INPUT"
    assert check["triggered"] is True and check["reason"] == 'banned content "darn" found in the user input'


async def test_guardrail_crud_and_versions(client: Client) -> None:
    await _shop(client)
    created = await guardrail(client, "g1", description="No swearing.", action=POLITE,
                              contentFilter={"bannedContents": ["darn"], "matchType": "SIMPLE_STRING_MATCH"})
    assert created["name"] == guardrail_name("g1") and created["etag"] and created["enabled"] is True
    assert await call_json(client, "get_guardrail", {"name": guardrail_name("g1")}) == created
    switched = await call_json(client, "update_guardrail", {"guardrail": {
        "name": guardrail_name("g1"), "codeCallback": {"beforeAgentCallback": fixture("guard_refunds")}},
        "updateMask": "codeCallback"})
    assert "contentFilter" not in switched, "setting one guardrail type clears the other"
    listed = await call_json(client, "list_guardrails", {"parent": APP})
    assert [g["name"] for g in listed["guardrails"]] == [guardrail_name("g1")]
    await shop_agent(client, "front", "g1")
    version = await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v1", "appVersion": {}})
    assert [g["name"] for g in version["snapshot"]["guardrails"]] == [guardrail_name("g1")]
    await call_json(client, "update_guardrail", {"guardrail": {"name": guardrail_name("g1"), "enabled": False},
                                                 "updateMask": "enabled"})
    assert texts(await say(client, "v-1", "a refund", "front")) == ["I can help with orders."], "disabled in the draft"
    pinned = await run(client, "v-2", {"text": "a refund"}, entryAgent=agent_name("front"), appVersion=f"{APP}/versions/v1")
    assert texts(pinned) == ["Please keep it polite."], "the version keeps the guardrail as it was"
    error_text(await client.call_tool("delete_guardrail", {"name": guardrail_name("g1"), "etag": created["etag"]}),
               "ABORTED")
    await call_json(client, "delete_guardrail", {"name": guardrail_name("g1")})
    error_text(await client.call_tool("get_guardrail", {"name": guardrail_name("g1")}), "NOT_FOUND")


HOSTILE_GUARDRAILS: list[tuple[dict[str, Any], str]] = [
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"}, "displayName": ""},
     "guardrail.displayName is required"),
    ({}, "guardrail needs one of contentFilter, codeCallback"),
    ({"contentFilter": {"bannedContents": ["x"]}}, "guardrail.contentFilter.matchType is required"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "MATCH_TYPE_UNSPECIFIED"}},
     "guardrail.contentFilter.matchType is required"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "FUZZY"}}, "matchType"),
    ({"contentFilter": {"bannedContents": ["(a+)+$"], "matchType": "REGEXP_MATCH"}},
     "guardrail.contentFilter.bannedContents[0]: regular expression refused"),
    ({"contentFilter": {"bannedContentsInUserInput": ["ok", "(unclosed"], "matchType": "REGEXP_MATCH"}},
     "guardrail.contentFilter.bannedContentsInUserInput[1]: bad regular expression"),
    ({"contentFilter": {"bannedContentsInAgentResponse": ["x*"], "matchType": "REGEXP_MATCH"}},
     "guardrail.contentFilter.bannedContentsInAgentResponse[0] matches the empty string"),
    ({"contentFilter": {"bannedContents": ["  "], "matchType": "SIMPLE_STRING_MATCH"}},
     "guardrail.contentFilter.bannedContents[0] is empty"),
    ({"contentFilter": {"bannedContents": ["x" * 501], "matchType": "SIMPLE_STRING_MATCH"}},
     "guardrail.contentFilter.bannedContents[0] is longer than"),
    ({"llmPolicy": {"prompt": "Be nice.", "policyScope": "USER_QUERY"}},
     "guardrail.llmPolicy is not supported by Convener"),
    ({"llmPromptSecurity": {"defaultSettings": {}}}, "guardrail.llmPromptSecurity is not supported by Convener"),
    ({"modelSafety": {"safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH",
                                          "threshold": "BLOCK_LOW_AND_ABOVE"}]}},
     "guardrail.modelSafety is not supported by Convener"),
    ({"codeCallback": {}}, "guardrail.codeCallback needs at least one of"),
    ({"codeCallback": {"beforeAgentCallback": {"pythonCode": "def f(x): return x"}}},
     "guardrail.codeCallback.beforeAgentCallback.pythonCode is not run by Convener"),
    ({"codeCallback": {"afterAgentCallback": {"description": "no code"}}},
     "guardrail.codeCallback.afterAgentCallback.entryPoint is required"),
    ({"codeCallback": {"beforeAgentCallback": fixture("guard_refunds", timeout="0s")}},
     "guardrail.codeCallback.beforeAgentCallback.timeout"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "codeCallback": {"beforeAgentCallback": fixture("guard_refunds")}}, "guardrail_type"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "action": {"generativeAnswer": {"prompt": "Decline politely."}}},
     "guardrail.action.generativeAnswer is not supported by Convener"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "action": {"transferAgent": {"agent": agent_name("ghost")}}}, "guardrail.action.transferAgent.agent"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "action": {"transferAgent": {"agent": "projects/p/locations/l/apps/other/agents/human"}}},
     "guardrail.action.transferAgent.agent"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "action": {"respondImmediately": {"responses": [{"text": "off", "disabled": True}]}}},
     "guardrail.action.respondImmediately.responses needs a response that is not disabled"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "action": {"respondImmediately": {"responses": [{"text": ""}]}}},
     "guardrail.action.respondImmediately.responses[0].text is required"),
    ({"contentFilter": {"bannedContents": ["x"], "matchType": "SIMPLE_STRING_MATCH"},
      "action": {"respondImmediately": {"responses": [{"text": "a"}]}, "transferAgent": {"agent": "x"}}},
     "action"),
]

HOSTILE_AGENTS: list[tuple[dict[str, Any], str]] = [
    ({"guardrails": [guardrail_name("ghost")]}, "agent.guardrails[0]"),
    ({"guardrails": ["projects/p/locations/l/apps/other/guardrails/g"]}, "agent.guardrails[0]"),
    ({"beforeAgentCallbacks": [{"pythonCode": "def f(x): pass"}]},
     "agent.beforeAgentCallbacks[0].pythonCode is not run by Convener"),
    ({"beforeToolCallbacks": [fixture("fix_order_ids", timeout="3600s")]}, "agent.beforeToolCallbacks[0].timeout"),
    ({"beforeModelCallbacks": [fixture("canned_model")], "playbookAgent": SHOP, "tools": [tool_name("lookup")]},
     "agent.beforeModelCallbacks: only llm agents call a model"),
    ({"beforeAgentCallbacks": [fixture("answer_pings")] * 21}, "agent.beforeAgentCallbacks lists more than 20"),
    ({"beforeAgentCallbacks": [{"entryPoint": f"{FIXTURES}:answer_pings", "code": "x"}]}, "code"),
]


async def test_hostile_definitions_are_rejected_naming_the_field(client: Client) -> None:
    await _shop(client)
    for definition, named in HOSTILE_GUARDRAILS:
        body = {"displayName": "Bad", **definition}
        result = await client.call_tool("create_guardrail", {"parent": APP, "guardrailId": "bad", "guardrail": body})
        assert named in error_text(result, "INVALID_ARGUMENT"), definition
    assert "guardrails" not in await call_json(client, "list_guardrails", {"parent": APP}), "nothing was stored"
    for definition, named in HOSTILE_AGENTS:
        result = await client.call_tool("create_agent", {"parent": APP, "agentId": "bad", "agent": {
            "displayName": "Bad", **definition}})
        assert named in error_text(result, "INVALID_ARGUMENT"), definition
    error_text(await client.call_tool("get_agent", {"name": agent_name("bad")}), "NOT_FOUND")
    unknown = await client.call_tool("update_app", {"app": {"name": APP, "guardrails": [guardrail_name("ghost")]},
                                                    "updateMask": "guardrails"})
    assert "app.guardrails[0]" in error_text(unknown, "INVALID_ARGUMENT")
    at_birth = await client.call_tool("create_app", {"parent": APP.rsplit("/apps/", 1)[0], "appId": "born", "app": {
        "guardrails": [guardrail_name("ghost")]}})
    assert "app.guardrails" in error_text(at_birth, "INVALID_ARGUMENT")


async def test_callbacks_that_are_not_registered_are_refused(client: Client) -> None:
    await _shop(client)
    guardrail = await client.call_tool("create_guardrail", {"parent": APP, "guardrailId": "bad", "guardrail": {
        "displayName": "Bad", "codeCallback": {"afterModelCallback": {"entryPoint": "os:system"}}}})
    assert "guardrail.codeCallback.afterModelCallback.entryPoint" in error_text(guardrail, "PERMISSION_DENIED")
    for definition, named in [
        ({"afterToolCallbacks": [fixture("hide_totals"), {"entryPoint": "subprocess:run"}]},
         "agent.afterToolCallbacks[1].entryPoint"),
        ({"afterAgentCallbacks": [{"entryPoint": f"{FIXTURES}:nothing_here"}]}, "agent.afterAgentCallbacks[0].entryPoint"),
    ]:
        result = await client.call_tool("create_agent", {"parent": APP, "agentId": "bad", "agent": {
            "displayName": "Bad", **definition}})
        assert named in error_text(result, "PERMISSION_DENIED"), definition


# -- agent callbacks ---------------------------------------------------------------------------------------


async def test_before_and_after_agent_callbacks_answer_replace_and_set_variables(client: Client) -> None:
    await _shop(client)
    await shop_agent(client, "host", beforeAgentCallbacks=[fixture("answer_pings"), fixture("never_reached")],
                     afterAgentCallbacks=[fixture("shout_replies")])
    pong = await say(client, "cb-1", "ping", "host")
    assert texts(pong) == ["pong (no tier)"]
    agent_span = root(pong)["childSpans"][0]
    assert [s["name"] for s in agent_span["childSpans"]] == ["USER_CALLBACK"], "the override skips the rest"
    assert agent_span["childSpans"][0]["attributes"] == {
        "stage": "BEFORE_AGENT", "entryPoint": f"{FIXTURES}:answer_pings", "index": 0, "overridden": True}
    assert "intent" not in agent_span["attributes"], "the agent did not run"

    vip = await say(client, "cb-1", "vip order A-1")
    assert texts(vip) == ["Order A-1 is shipped."]
    assert kinds(vip) == ["updatedVariables", "toolCall", "toolResponse", "text"]
    assert agent_chunks(vip)[0]["updatedVariables"] == {"tier": "gold"}
    stages = [(a["stage"], a["overridden"]) for a in attributes(root(vip), "USER_CALLBACK")]
    assert stages == [("BEFORE_AGENT", False), ("BEFORE_AGENT", False), ("AFTER_AGENT", False)]
    assert texts(await say(client, "cb-1", "ping")) == ["pong (gold)"], "the variables were kept"

    shouted = await run(client, "cb-1", {"variables": {"shout": True}}, {"text": "what is the code"})
    assert texts(shouted) == ["THE DOOR CODE IS 1234. / ANYTHING ELSE?"]
    assert kinds(shouted) == ["text", "updatedVariables"]
    assert agent_chunks(shouted)[1]["updatedVariables"] == {"shouted": 2}
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/cb-1"}))
    assert [a["overridden"] for a in attributes(recorded["turns"][-1]["rootSpan"], "USER_CALLBACK")] == [
        False, False, True]


async def test_before_and_after_tool_callbacks_around_a_playbook_tool(client: Client) -> None:
    await _shop(client)
    await shop_agent(client, "clerk", beforeToolCallbacks=[fixture("fix_order_ids")],
                     afterToolCallbacks=[fixture("hide_totals")])
    fixed = await say(client, "t-1", "order a-1", "clerk")
    assert texts(fixed) == ["Order A-1 is shipped."]
    call, response = (c for c in agent_chunks(fixed) if "toolCall" in c or "toolResponse" in c)
    assert call["toolCall"]["args"] == {"order_id": "A-1"}, "the call is recorded as it ran"
    assert response["toolResponse"]["response"]["output"]["total"] == "hidden"
    agent_span = root(fixed)["childSpans"][0]
    assert [(s["name"], s["attributes"].get("stage"), s["attributes"].get("overridden"))
            for s in agent_span["childSpans"]] == [
        ("USER_CALLBACK", "BEFORE_TOOL", False), ("TOOL", None, None), ("USER_CALLBACK", "AFTER_TOOL", True)]
    assert agent_span["childSpans"][1]["attributes"]["args"] == {"order_id": "A-1"}

    cached = await say(client, "t-1", "order z-0")
    assert texts(cached) == ["Order Z-0 is archived."]
    assert spans(root(cached), "TOOL") == [], "the callback answered instead of the tool"
    assert [a["overridden"] for a in attributes(root(cached), "USER_CALLBACK")] == [True, False]
    assert kinds(cached) == ["toolCall", "toolResponse", "text"]


async def test_failing_callbacks_are_recorded_and_the_turn_goes_on(client: Client) -> None:
    await _shop(client)
    await shop_agent(client, "brittle",
                     beforeAgentCallbacks=[fixture("crashing_callback"), fixture("never_reached", disabled=True)],
                     afterAgentCallbacks=[fixture("wrong_shape_callback")],
                     beforeToolCallbacks=[fixture("slow_callback", timeout="0.2s")],
                     afterToolCallbacks=[fixture("hide_totals", description="off", disabled=True)])
    response = await say(client, "f-1", "order A-1", "brittle")
    assert texts(response) == ["Order A-1 is shipped."]
    ran = attributes(root(response), "USER_CALLBACK")
    assert [(a["stage"], a["errorInfo"]["code"], a["overridden"]) for a in ran] == [
        ("BEFORE_AGENT", "INTERNAL", False), ("BEFORE_TOOL", "DEADLINE_EXCEEDED", False),
        ("AFTER_AGENT", "INVALID_ARGUMENT", False)], "disabled callbacks do not run"
    assert "ValueError: callback bug" in ran[0]["errorInfo"]["message"]
    assert "returned a list" in ran[2]["errorInfo"]["message"]
    assert agent_chunks(response)[1]["toolResponse"]["response"]["output"]["total"] == 42.5
    assert texts(await say(client, "f-1", "say hi")) == ["hi"]


# -- llm agents: model callbacks and model-stage guardrails -------------------------------------------------


async def test_model_callbacks_and_guardrails_of_an_llm_agent(client: Client, fake_openai: FakeOpenAI) -> None:
    await _shop(client)
    await python_tool(client, "explode", "explode")
    await guardrail(client, "on-topic", codeCallback={"afterModelCallback": fixture("guard_model_answers")},
                    action={"respondImmediately": {"responses": [{"text": "I can only talk about our shop."}]}})
    await guardrail(client, "no-codes", contentFilter={"bannedContentsInAgentResponse": [r"\d{4}"],
                                                      "matchType": "REGEXP_MATCH"},
                    action={"respondImmediately": {"responses": [{"text": "I can't share codes."}]}})
    await agent(client, "assistant", instruction="You help shoppers.", tools=[tool_name("lookup"), tool_name("explode")],
                guardrails=[guardrail_name("on-topic"), guardrail_name("no-codes")],
                beforeModelCallbacks=[fixture("canned_model")], afterModelCallbacks=[fixture("sign_model_text")])

    hours = await say(client, "m-1", "what are your hours?", "assistant")
    assert texts(hours) == ["We are open 9 to 5. — Shop"], "after-model callbacks see a before-model answer too"
    assert fake_openai.requests == [] and spans(root(hours), "LLM") == []

    fake_openai.reply(tool_calls=[("lookup_order", {"order_id": "A-1"})])
    fake_openai.reply(text="Order A-1 has shipped.")
    shipped = await say(client, "m-1", "where is A-1?")
    assert texts(shipped) == ["Order A-1 has shipped. — Shop"]
    names = [s["name"] for s in root(shipped)["childSpans"][0]["childSpans"]]
    assert names == ["USER_CALLBACK", "LLM", "USER_CALLBACK", "GUARDRAIL", "TOOL",
                     "USER_CALLBACK", "LLM", "USER_CALLBACK", "GUARDRAIL", "GUARDRAIL"]
    checks = attributes(root(shipped), "GUARDRAIL")
    assert [(c["stage"], c["triggered"]) for c in checks] == [
        ("MODEL_RESPONSE", False), ("MODEL_RESPONSE", False), ("AGENT_RESPONSE", False)]
    assert [(a["stage"], a["overridden"]) for a in attributes(root(shipped), "USER_CALLBACK")] == [
        ("BEFORE_MODEL", False), ("AFTER_MODEL", False), ("BEFORE_MODEL", False), ("AFTER_MODEL", True)]

    fake_openai.reply(text="Honestly, try Acme.")
    assert texts(await say(client, "m-1", "any alternatives?")) == ["I can only talk about our shop."]
    fake_openai.reply(tool_calls=[("explode", {})])
    blocked = await say(client, "m-1", "blow it up")
    assert texts(blocked) == ["I can only talk about our shop."]
    assert spans(root(blocked), "TOOL") == [] and kinds(blocked) == ["text"], "the blocked answer's calls never ran"

    fake_openai.reply(text="The door code is 4321.")
    assert texts(await say(client, "m-1", "door code?")) == ["I can't share codes."]
    fake_openai.reply(text="Anything else?")
    await say(client, "m-1", "no")
    history = fake_openai.requests[-1]["messages"]
    said = [m["content"] for m in history if m["role"] == "assistant" and m.get("content")]
    assert "I can't share codes." in said and not any("4321" in text for text in said), \
        "the model's history holds what the user was told"
    assert not any("explode" in json.dumps(m.get("tool_calls")) for m in history), "nor did they reach the history"


# -- files ---------------------------------------------------------------------------------------------------


async def test_export_import_round_trips_guardrails_and_callbacks(client: Client) -> None:
    await _shop(client)
    await guardrail(client, "refunds", codeCallback={"beforeAgentCallback": fixture("guard_refunds")},
                    action={"transferAgent": {"agent": agent_name("human")}})
    await guardrail(client, "polite", action=POLITE, contentFilter={"bannedContents": ["darn"],
                                                                   "matchType": "WORD_BOUNDARY_STRING_MATCH"})
    await call_json(client, "update_agent", {"agent": {"name": agent_name("human"), "guardrails": [
        guardrail_name("refunds")]}, "updateMask": "guardrails"})
    await shop_agent(client, "front", "refunds", beforeAgentCallbacks=[fixture("answer_pings")],
                     afterToolCallbacks=[fixture("hide_totals", timeout="2s")])
    await call_json(client, "update_app", {"app": {"name": APP, "rootAgent": agent_name("front"),
                                                   "guardrails": [guardrail_name("polite")]},
                                           "updateMask": "rootAgent,guardrails"})
    exported = (await call_json(client, "export_app", {"name": APP}))["appContent"]
    document = yaml.safe_load(exported)
    assert document["app"]["guardrails"] == ["polite"]
    assert document["guardrails"]["refunds"]["action"] == {"transferAgent": {"agent": "human"}}
    assert "name" not in document["guardrails"]["polite"] and document["guardrails"]["polite"]["enabled"] is True
    assert document["agents"]["front"]["guardrails"] == ["refunds"]
    assert document["agents"]["front"]["afterToolCallbacks"] == [fixture("hide_totals", timeout="2s")]

    copy = APP.rsplit("/", 1)[0] + "/copy"
    imported = await call_json(client, "import_app", {"parent": APP.rsplit("/apps/", 1)[0], "appId": "copy",
                                                      "appContent": exported})
    assert imported["guardrails"] == [f"{copy}/guardrails/polite"]
    assert (await call_json(client, "export_app", {"name": copy}))["appContent"] == exported
    refunds = await call_json(client, "get_guardrail", {"name": f"{copy}/guardrails/refunds"})
    assert refunds["action"]["transferAgent"]["agent"] == f"{copy}/agents/human"
    session = {"config": {"session": f"{copy}/sessions/s1"}, "inputs": [{"text": "ping"}]}
    assert texts(await call_json(client, "run_session", session)) == ["pong (no tier)"]
    session["inputs"] = [{"text": "oh darn, a refund"}]
    assert texts(await call_json(client, "run_session", session)) == ["Please keep it polite."]
    session["inputs"] = [{"text": "a refund"}]
    assert texts(await call_json(client, "run_session", session)) == ["A human will take it from here."]

    broken = exported.replace("agent: human", "agent: nobody")
    result = await client.call_tool("import_app", {"parent": APP.rsplit("/apps/", 1)[0], "appId": "broken",
                                                   "appContent": broken})
    assert "appContent: guardrails.refunds: guardrail.action.transferAgent.agent" in error_text(
        result, "INVALID_ARGUMENT")
    error_text(await client.call_tool("get_app", {"name": APP.rsplit("/", 1)[0] + "/broken"}), "NOT_FOUND")
