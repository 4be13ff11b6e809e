"""Deployments through the MCP tools: CRUD with etags, hostile inputs, and sessions started through a deployment
running the version it names then (pinned for the session), recorded on the conversation and listed by it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.config import Settings
from tests.ces.session_helpers import APP, agent, make_app, run, runtime_settings, set_root, texts
from tests.e2e.conftest import call_json, conversation, error_text, listed

pytestmark = pytest.mark.anyio
WEB = f"{APP}/deployments/web"
V1 = f"{APP}/versions/v1"
V2 = f"{APP}/versions/v2"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path)


async def _versions(client: Client) -> None:
    """An app whose agent says "one" in v1 and "two" in v2 (and "draft" in the draft)."""
    await make_app(client)
    await agent(client, "front", playbookAgent={"fallback": [{"reply": "one"}]})
    await set_root(client, "front")
    await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v1", "appVersion": {}})
    await _says(client, "two")
    await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v2", "appVersion": {}})
    await _says(client, "draft")


async def _says(client: Client, reply: str) -> None:
    await call_json(client, "update_agent", {"agent": {"name": f"{APP}/agents/front", "playbookAgent": {
        "fallback": [{"reply": reply}]}}, "updateMask": "playbookAgent"})


async def _deploy(client: Client, version: str = V1, deployment_id: str = "web", **extra: Any) -> dict[str, Any]:
    return await call_json(client, "create_deployment", {"parent": APP, "deploymentId": deployment_id, "deployment": {
        "displayName": deployment_id.title(), "appVersion": version, **extra}})


async def test_crud_with_channel_profile_and_etags(client: Client) -> None:
    await _versions(client)
    profile = {"channelType": "WEB_UI", "personaProperty": {"persona": "CHATTY"}, "disableDtmf": True,
               "webWidgetConfig": {"modality": "CHAT_AND_VOICE", "theme": "DARK", "webWidgetTitle": "Shop"},
               "noiseSuppressionLevel": "high", "profileId": "web-1"}
    created = await _deploy(client, channelProfile=profile)
    assert created["name"] == WEB and created["appVersion"] == V1 and created["channelProfile"] == profile
    assert {"createTime", "updateTime", "etag"} <= set(created)
    assert await call_json(client, "get_deployment", {"name": WEB}) == created
    await _deploy(client, f"{APP}/versions/-", "api")
    page = await call_json(client, "list_deployments", {"parent": APP, "pageSize": 1})
    assert [d["name"] for d in page["deployments"]] == [f"{APP}/deployments/api"]
    rest = await call_json(client, "list_deployments", {"parent": APP, "pageToken": page["nextPageToken"]})
    assert [d["name"] for d in rest["deployments"]] == [WEB] and "nextPageToken" not in rest
    moved = await call_json(client, "update_deployment", {"deployment": {"name": WEB, "appVersion": V2,
                                                                          "etag": created["etag"]},
                                                           "updateMask": "appVersion"})
    assert moved["appVersion"] == V2 and moved["channelProfile"] == profile and moved["etag"] != created["etag"]
    stale = await client.call_tool("update_deployment", {"deployment": {"name": WEB, "displayName": "x",
                                                                         "etag": created["etag"]},
                                                          "updateMask": "displayName"})
    error_text(stale, "ABORTED")
    error_text(await client.call_tool("delete_deployment", {"name": WEB, "etag": created["etag"]}), "ABORTED")
    await call_json(client, "delete_deployment", {"name": WEB, "etag": moved["etag"]})
    error_text(await client.call_tool("get_deployment", {"name": WEB}), "NOT_FOUND")


@pytest.mark.parametrize(("deployment", "message"), [
    ({"appVersion": V1}, "displayName is required"),
    ({"displayName": "Web"}, "appVersion is required"),
    ({"displayName": "Web", "appVersion": f"{APP}/versions/nope"}, "does not exist"),
    ({"displayName": "Web", "appVersion": "projects/acme/locations/global/apps/other/versions/v1"},
     "is not a version of"),
    ({"displayName": "Web", "appVersion": f"{APP}/deployments/web"}, "appVersion"),  # a reference to itself
    ({"displayName": "Web", "appVersion": f"{APP}/versions/v1/../v1"}, "appVersion"),
    ({"displayName": "Web", "appVersion": "x" * 5000}, ""),
    ({"displayName": "W" * 513, "appVersion": V1}, "longer than 512"),
    ({"displayName": "Web", "appVersion": V1, "channelProfile": {"channelType": "SMOKE_SIGNAL"}}, "channelType"),
    ({"displayName": "Web", "appVersion": V1, "channelProfile": {"noiseSuppressionLevel": "max"}}, "noiseSupp"),
    ({"displayName": "Web", "appVersion": V1, "channelProfile": {"webWidgetConfig": {"theme": "<script>"}}},
     "theme"),
    ({"displayName": "Web", "appVersion": V1, "channelProfile": {"profileId": "p" * 600}}, "profileId"),
    ({"displayName": "Web", "appVersion": V1, "channelProfile": {"personaProperty": {"persona": "RUDE"}}}, "persona"),
    ({"displayName": "Web", "appVersion": V1, "channelProfile": "WEB_UI"}, ""),
])
async def test_hostile_deployments_are_refused_and_nothing_is_written(client: Client, deployment: dict[str, Any],
                                                                      message: str) -> None:
    await _versions(client)
    result = await client.call_tool("create_deployment", {"parent": APP, "deploymentId": "web",
                                                          "deployment": deployment})
    assert message in error_text(result, "INVALID_ARGUMENT")
    assert (await call_json(client, "list_deployments", {"parent": APP})).get("deployments") is None


async def test_hostile_names_and_updates(client: Client) -> None:
    await _versions(client)
    for deployment_id in ("../web", "-", "w" * 200, ""):
        result = await client.call_tool("create_deployment", {"parent": APP, "deploymentId": deployment_id or None,
                                                              "deployment": {"displayName": "W", "appVersion": V1}})
        if deployment_id:
            error_text(result, "INVALID_ARGUMENT")
    await _deploy(client)
    error_text(await client.call_tool("create_deployment", {"parent": APP, "deploymentId": "web", "deployment": {
        "displayName": "W", "appVersion": V1}}), "ALREADY_EXISTS")
    error_text(await client.call_tool("create_deployment", {
        "parent": "projects/acme/locations/global/apps/missing", "deploymentId": "web",
        "deployment": {"displayName": "W", "appVersion": V1}}), "NOT_FOUND")
    error_text(await client.call_tool("update_deployment", {"deployment": {"name": WEB, "appVersion": "nope"},
                                                            "updateMask": "appVersion"}), "INVALID_ARGUMENT")
    error_text(await client.call_tool("update_deployment", {"deployment": {"name": WEB, "createTime": "x"},
                                                            "updateMask": "createTime"}), "INVALID_ARGUMENT")
    error_text(await client.call_tool("get_deployment", {"name": f"{APP}/agents/front"}), "INVALID_ARGUMENT")
    assert (await call_json(client, "get_deployment", {"name": WEB}))["appVersion"] == V1


async def test_a_session_through_a_deployment_runs_its_version_and_is_recorded_with_it(client: Client) -> None:
    await _versions(client)
    await _deploy(client)
    assert texts(await run(client, "a", {"text": "hi"}, deployment=WEB)) == ["one"]
    recorded = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/a"}))
    assert recorded["deployment"] == WEB and recorded["appVersion"] == V1
    # Done when: the conversation's deployment names a real deployment that chose the version it ran.
    chosen = await call_json(client, "get_deployment", {"name": recorded["deployment"]})
    assert chosen["appVersion"] == recorded["appVersion"]
    assert texts(await run(client, "plain", {"text": "hi"})) == ["draft"]


async def test_moving_a_deployment_changes_new_sessions_only(client: Client) -> None:
    await _versions(client)
    await _deploy(client)
    assert texts(await run(client, "old", {"text": "hi"}, deployment=WEB)) == ["one"]
    await call_json(client, "update_deployment", {"deployment": {"name": WEB, "appVersion": V2},
                                                  "updateMask": "appVersion"})
    assert texts(await run(client, "old", {"text": "again"}, deployment=WEB)) == ["one"], "pinned when it started"
    assert texts(await run(client, "old", {"text": "and again"})) == ["one"]
    assert texts(await run(client, "new", {"text": "hi"}, deployment=WEB)) == ["two"]
    await call_json(client, "update_deployment", {"deployment": {"name": WEB, "appVersion": f"{APP}/versions/-"},
                                                  "updateMask": "appVersion"})
    assert texts(await run(client, "drafty", {"text": "hi"}, deployment=WEB)) == ["draft"]
    old = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/old"}))
    new = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/new"}))
    assert (old["appVersion"], old["turnCount"], new["appVersion"]) == (V1, 3, V2)
    drafty = conversation(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/drafty"}))
    assert drafty["deployment"] == WEB and "appVersion" not in drafty


async def test_sessions_refuse_what_a_deployment_cannot_give(client: Client) -> None:
    await _versions(client)
    await _deploy(client)
    await _deploy(client, V2, "api")
    missing = f"{APP}/deployments/missing"
    error_text(await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/x", "deployment": missing},
                                                      "inputs": [{"text": "hi"}]}), "NOT_FOUND")
    other = "projects/acme/locations/global/apps/other/deployments/web"
    error_text(await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/x", "deployment": other},
                                                      "inputs": [{"text": "hi"}]}), "INVALID_ARGUMENT")
    error_text(await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/x", "deployment": WEB,
                                                                 "appVersion": V2},
                                                      "inputs": [{"text": "hi"}]}), "INVALID_ARGUMENT")
    await run(client, "x", {"text": "hi"}, deployment=WEB)
    switched = await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/x", "deployment":
                                                                 f"{APP}/deployments/api"}, "inputs": [{"text": "hi"}]})
    assert "cannot switch deployments" in error_text(switched, "FAILED_PRECONDITION")
    # A version deleted under a deployment: sessions through it cannot start, and say why.
    await call_json(client, "delete_app_version", {"name": V2})
    gone = await client.call_tool("run_session", {"config": {"session": f"{APP}/sessions/y", "deployment":
                                                             f"{APP}/deployments/api"}, "inputs": [{"text": "hi"}]})
    assert "no longer exists" in error_text(gone, "FAILED_PRECONDITION")
    error_text(await client.call_tool("get_conversation", {"name": f"{APP}/conversations/y"}), "NOT_FOUND")


async def test_list_conversations_filters_on_deployment(client: Client) -> None:
    await _versions(client)
    await _deploy(client)
    await _deploy(client, V2, "api")
    for session, deployment in (("w1", WEB), ("a1", f"{APP}/deployments/api"), ("w2", WEB), ("none", None)):
        await run(client, session, {"text": "hi"}, **({"deployment": deployment} if deployment else {}))
    page = listed(await client.call_tool("list_conversations", {"parent": APP, "filter": f'deployment = "{WEB}"'}))
    assert [c["name"].rsplit("/", 1)[1] for c in page["conversations"]] == ["w2", "w1"]
    assert {c["appVersion"] for c in page["conversations"]} == {V1}
    first = listed(await client.call_tool("list_conversations", {"parent": APP, "pageSize": 1,
                                                                 "filter": f'deployment = "{WEB}"'}))
    assert [c["name"].rsplit("/", 1)[1] for c in first["conversations"]] == ["w2"]
    rest = listed(await client.call_tool("list_conversations", {"parent": APP, "pageSize": 1,
                                                                "filter": f'deployment = "{WEB}"',
                                                                "pageToken": first["nextPageToken"]}))
    assert [c["name"].rsplit("/", 1)[1] for c in rest["conversations"]] == ["w1"]
    error_text(await client.call_tool("list_conversations", {"parent": APP, "filter": 'deployment = "x"',
                                                             "pageToken": first["nextPageToken"]}), "INVALID_ARGUMENT")
    none = listed(await client.call_tool("list_conversations", {"parent": APP, "filter": 'deployment = ""'}))
    assert [c["name"].rsplit("/", 1)[1] for c in none["conversations"]] == ["none"]
