"""Changelogs through the MCP tools: one entry per change written in its transaction (none for a failed one),
numbered per app without gaps under concurrent writers, filters and keyset pages, hostile inputs, bounded
before/after copies, retention, and the link from an evaluation result of the draft to the change it ran after."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from sqlalchemy import func, select, update

from convener.auth.caller import LOCAL_USER
from convener.ces.definitions import Agent
from convener.ces.tables import changelogs
from convener.config import Settings
from convener.outside.limits import CHANGELOG_RESOURCE_BYTES
from convener.services import Services
from tests.ces.session_helpers import APP, FIXTURES, agent, agent_name, make_app, runtime_settings, set_root
from tests.e2e.conftest import EVALUATION_RESULT_VALIDATOR, assert_matches, call_json, error_text

pytestmark = pytest.mark.anyio

OTHER = "projects/acme/locations/global/apps/other"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path)


async def entries(client: Client, app: str = APP, **arguments: Any) -> list[dict[str, Any]]:
    """Every changelog of ``app`` the arguments select, following pages."""
    found: list[dict[str, Any]] = []
    token = None
    while True:
        page = await call_json(client, "list_changelogs", {"parent": app, **arguments,
                                                            **({"pageToken": token} if token else {})})
        found += page.get("changelogs", [])
        token = page.get("nextPageToken")
        if not token:
            return found


def summary(entry: dict[str, Any]) -> tuple[str, str, str]:
    return entry["action"], entry["resourceType"], entry["resource"].removeprefix(APP)


async def test_each_change_writes_exactly_one_entry_and_a_failed_change_none(client: Client) -> None:
    await make_app(client)
    created = await agent(client, "greeter", instruction="Say hello.")
    await call_json(client, "create_tool", {"parent": APP, "toolId": "lookup", "tool": {
        "pythonFunction": {"entryPoint": f"{FIXTURES}:lookup_order"}}})
    await call_json(client, "update_agent", {"agent": {"name": agent_name("greeter"), "instruction": "Say hi."},
                                             "updateMask": "instruction"})
    await set_root(client, "greeter")
    await call_json(client, "create_guardrail", {"parent": APP, "guardrailId": "rude", "guardrail": {
        "displayName": "Rude", "contentFilter": {"bannedContents": ["idiot"], "matchType": "SIMPLE_STRING_MATCH"}}})
    await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v1", "appVersion": {}})
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "e1", "evaluation": {
        "displayName": "E1", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi"}}]}]}}})
    await call_json(client, "create_evaluation_dataset", {"parent": APP, "evaluationDatasetId": "d1",
                                                          "evaluationDataset": {"displayName": "D1",
                                                                                "evaluations": [f"{APP}/evaluations/e1"]}})
    await call_json(client, "delete_guardrail", {"name": f"{APP}/guardrails/rude"})
    before = await entries(client)

    # Refused changes: a bad reference, a duplicate ID, a stale etag, an unknown field, a missing resource.
    failures = [
        ("update_agent", {"agent": {"name": agent_name("greeter"), "tools": [f"{APP}/tools/missing"]},
                          "updateMask": "tools"}, "INVALID_ARGUMENT"),
        ("create_agent", {"parent": APP, "agentId": "greeter", "agent": {"displayName": "Again"}}, "ALREADY_EXISTS"),
        ("delete_agent", {"name": agent_name("greeter"), "etag": created["etag"]}, "ABORTED"),
        ("update_app", {"app": {"name": APP, "displayName": "x"}, "updateMask": "nope"}, "INVALID_ARGUMENT"),
        ("delete_tool", {"name": f"{APP}/tools/missing"}, "NOT_FOUND"),
        ("delete_evaluation", {"name": f"{APP}/evaluations/e1"}, "FAILED_PRECONDITION"),
    ]
    for tool, arguments, code in failures:
        error_text(await client.call_tool(tool, arguments), code)

    after = await entries(client)
    assert after == before, "a refused change writes no entry"
    assert [summary(entry) for entry in reversed(after)] == [
        ("Create", "App", ""),
        ("Create", "Agent", "/agents/greeter"),
        ("Create", "Tool", "/tools/lookup"),
        ("Update", "Agent", "/agents/greeter"),
        ("Update", "App", ""),
        ("Create", "Guardrail", "/guardrails/rude"),
        ("Create", "AppVersion", "/versions/v1"),
        ("Create", "Evaluation", "/evaluations/e1"),
        ("Create", "EvaluationDataset", "/evaluationDatasets/d1"),
        ("Delete", "Guardrail", "/guardrails/rude"),
    ]
    assert [entry["sequenceNumber"] for entry in after] == [str(n) for n in range(len(after), 0, -1)]
    times = [entry["createTime"] for entry in after]
    assert times == sorted(times, reverse=True) and len(set(times)) == len(times)
    update_entry = after[-4]
    assert update_entry["author"] == LOCAL_USER.principal
    assert update_entry["displayName"] == "Greeter"
    assert update_entry["description"] == "Updated instruction"
    assert update_entry["originalResource"]["instruction"] == "Say hello."
    assert update_entry["newResource"]["instruction"] == "Say hi."
    assert update_entry["name"].startswith(f"{APP}/changelogs/")
    assert await call_json(client, "get_changelog", {"name": update_entry["name"]}) == update_entry
    deleted = after[0]
    assert "newResource" not in deleted and deleted["originalResource"]["displayName"] == "Rude"


async def test_a_change_that_changes_others_is_one_entry_naming_them(client: Client) -> None:
    await make_app(client)
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "e1", "evaluation": {
        "displayName": "E1", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi"}}]}]}}})
    await call_json(client, "create_evaluation_dataset", {"parent": APP, "evaluationDatasetId": "d1",
                                                          "evaluationDataset": {"displayName": "D1",
                                                                                "evaluations": [f"{APP}/evaluations/e1"]}})
    count = len(await entries(client))
    await call_json(client, "delete_evaluation", {"name": f"{APP}/evaluations/e1", "force": True})

    newest, *rest = await entries(client)
    assert len(rest) == count
    assert summary(newest) == ("Delete", "Evaluation", "/evaluations/e1")
    assert [d["name"] for d in newest["dependentResources"]] == [f"{APP}/evaluationDatasets/d1"]
    assert "evaluations" not in newest["dependentResources"][0]


async def test_import_app_is_one_change_and_a_refused_import_none(client: Client) -> None:
    content = "\n".join([
        "id: shop", "app: {displayName: Shop, rootAgent: greeter}",
        "agents:", "  greeter: {displayName: Greeter, instruction: Hi}", "  helper: {displayName: Helper}"])
    parent = APP.rsplit("/apps/", 1)[0]
    await call_json(client, "import_app", {"parent": parent, "appContent": content})
    (created,) = await entries(client)
    assert summary(created) == ("Create", "App", "")
    assert sorted(d["name"] for d in created["dependentResources"]) == [agent_name("greeter"), agent_name("helper")]

    broken = content.replace("rootAgent: greeter", "rootAgent: nobody")
    error_text(await client.call_tool("import_app", {"parent": parent, "appContent": broken, "replace": True}),
               "INVALID_ARGUMENT")
    assert len(await entries(client)) == 1
    await call_json(client, "import_app", {"parent": parent, "appContent": content.replace("Hi}", "Hello}"),
                                           "replace": True})
    replaced = (await entries(client))[0]
    assert summary(replaced) == ("Update", "App", "") and replaced["sequenceNumber"] == "2"
    assert "replaced by import_app" in replaced["description"]


async def test_filters_select_by_action_type_resource_author_and_time(client: Client) -> None:
    await make_app(client)
    for index in range(3):
        await agent(client, f"a{index}")
    await call_json(client, "update_agent", {"agent": {"name": agent_name("a1"), "description": "d"},
                                             "updateMask": "description"})
    every = await entries(client)
    middle = every[2]["createTime"]

    def actions(found: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [summary(entry) for entry in found]

    assert actions(await entries(client, filter="action:update")) == [("Update", "Agent", "/agents/a1")]
    assert actions(await entries(client, filter='action="Update"')) == [("Update", "Agent", "/agents/a1")]
    assert await entries(client, filter='action="update"') == [], "= is exact"
    assert len(await entries(client, filter="resource_type:AGENT")) == 4
    assert len(await entries(client, filter="resourceType:app")) == 1
    assert actions(await entries(client, filter='resource_name:"agents/a2"')) == [("Create", "Agent", "/agents/a2")]
    assert len(await entries(client, filter='author:"USERS/LOCAL"')) == 5
    assert len(await entries(client, filter='author:"users/someone-else"')) == 0
    assert await entries(client, filter=f'create_time > "{middle}"') == every[:2]
    assert await entries(client, filter=f'createTime <= "{middle}" AND NOT action:create') == []
    assert await entries(client, filter=f'create_time <= "{middle}" AND resource_type:agent') == every[2:4]


async def test_pages_are_keyset_pages_newest_first_and_tokens_serve_only_their_query(client: Client) -> None:
    await make_app(client)
    await make_app(client, OTHER)
    for index in range(6):
        await agent(client, f"a{index}")
    every = await entries(client)
    assert len(every) == 7

    pages: list[list[str]] = []
    tokens: list[str] = []
    token = None
    while True:
        page = await call_json(client, "list_changelogs", {"parent": APP, "pageSize": 3,
                                                            **({"pageToken": token} if token else {})})
        pages.append([entry["sequenceNumber"] for entry in page["changelogs"]])
        token = page.get("nextPageToken")
        if not token:
            break
        tokens.append(token)
    assert pages == [["7", "6", "5"], ["4", "3", "2"], ["1"]]
    # A change between pages does not shift the next page: the keyset is the sequence number.
    await agent(client, "late")
    following = await call_json(client, "list_changelogs", {"parent": APP, "pageSize": 3, "pageToken": tokens[0]})
    assert [entry["sequenceNumber"] for entry in following["changelogs"]] == ["4", "3", "2"]

    oldest_first = await entries(client, orderBy="create_time", pageSize=2)
    assert [e["sequenceNumber"] for e in oldest_first] == [str(n) for n in range(1, 9)]
    by_name = await entries(client, orderBy="name desc", pageSize=3)
    assert [e["name"] for e in by_name] == sorted((e["name"] for e in oldest_first), reverse=True)

    for other in ({"parent": OTHER}, {"parent": APP, "filter": "action:create"}, {"parent": APP, "orderBy": "name"},
                  {"parent": APP, "orderBy": "create_time"}):
        refused = await client.call_tool("list_changelogs", {**other, "pageToken": tokens[0]})
        assert "pageToken" in error_text(refused, "INVALID_ARGUMENT")
    forged = tokens[0][:-2] + ("AA" if not tokens[0].endswith("AA") else "BB")
    error_text(await client.call_tool("list_changelogs", {"parent": APP, "pageToken": forged}), "INVALID_ARGUMENT")


@pytest.mark.parametrize(("arguments", "code"), [
    ({"parent": APP, "filter": "instruction:x"}, "INVALID_ARGUMENT"),
    ({"parent": APP, "filter": "create_time > yesterday"}, "INVALID_ARGUMENT"),
    ({"parent": APP, "filter": "create_time:2020"}, "INVALID_ARGUMENT"),
    ({"parent": APP, "filter": "(" * 40 + "action:x" + ")" * 40}, "INVALID_ARGUMENT"),
    ({"parent": APP, "filter": "action:x " * 600}, "INVALID_ARGUMENT"),
    ({"parent": APP, "filter": "action:\"'; DROP TABLE ces_changelogs; --\""}, None),
    ({"parent": APP, "filter": 'resource_name:"%"'}, None),
    ({"parent": APP, "orderBy": "sequence_number"}, "INVALID_ARGUMENT"),
    ({"parent": APP, "orderBy": "name; DROP TABLE x"}, "INVALID_ARGUMENT"),
    ({"parent": APP, "pageSize": -1}, "INVALID_ARGUMENT"),
    ({"parent": APP, "pageToken": "x" * 5000}, "INVALID_ARGUMENT"),
    ({"parent": APP + "/agents/a"}, "INVALID_ARGUMENT"),
    ({"parent": "projects/acme/locations/global/apps/../shop"}, "INVALID_ARGUMENT"),
    ({"parent": "projects/acme/locations/global/apps/nowhere"}, "NOT_FOUND"),
])
async def test_hostile_list_arguments_are_refused_or_match_nothing(client: Client, arguments: dict[str, Any],
                                                                 code: str | None) -> None:
    await make_app(client)
    result = await client.call_tool("list_changelogs", arguments)
    if code is None:
        assert not result.is_error and (result.structured_content or {}).get("changelogs") is None
    else:
        error_text(result, code)


async def test_hostile_names_are_refused_and_another_apps_changelog_is_not_found(client: Client) -> None:
    await make_app(client)
    await make_app(client, OTHER)
    (other,) = await entries(client, OTHER)
    elsewhere = other["name"].replace(OTHER, APP)
    error_text(await client.call_tool("get_changelog", {"name": elsewhere}), "NOT_FOUND")
    for name in (f"{APP}/changelogs/", f"{APP}/changelogs/../../x", f"{APP}/agents/x", "changelogs/1", "x" * 5000,
                 f"{APP}/changelogs/a\u0000b", f"{APP}/changelogs/{'9' * 200}"):
        error_text(await client.call_tool("get_changelog", {"name": name}))
    error_text(await client.call_tool("get_changelog", {"name": f"{OTHER}x/changelogs/abc"}), "NOT_FOUND")


async def test_an_oversized_resource_is_kept_within_the_limit_and_says_what_it_left_out(client: Client) -> None:
    await make_app(client)
    huge = "€" * 100_000  # 300,000 bytes of JSON as UTF-8: over ces.changelog.resource
    await agent(client, "big", instruction=huge, description="small")
    await call_json(client, "update_agent", {"agent": {"name": agent_name("big"), "description": "smaller"},
                                             "updateMask": "description"})
    updated, created = (await entries(client))[:2]

    assert "instruction" not in created["newResource"] and created["newResource"]["description"] == "small"
    assert "newResource leaves out instruction" in created["description"]
    assert "ces.changelog.resource" in created["description"]
    # An update keeps what changed on both sides, and leaves out what did not.
    assert updated["originalResource"]["description"] == "small"
    assert updated["newResource"]["description"] == "smaller"
    assert "instruction" not in updated["originalResource"] and "instruction" not in updated["newResource"]
    assert updated["description"].startswith("Updated description")
    for entry in (created, updated):
        for side in ("originalResource", "newResource"):
            if side in entry:
                assert len(json.dumps(entry[side], ensure_ascii=False).encode()) <= CHANGELOG_RESOURCE_BYTES


def test_concurrent_writers_of_one_app_get_every_number_once_in_order(services: Services) -> None:
    from convener.ces.apps import AppService  # noqa: F401 (the service the threads write through)
    from convener.ces.requests import CreateAppRequest
    from convener.ces.models import App

    services.apps.create(CreateAppRequest(parent=APP.rsplit("/apps/", 1)[0], app_id="shop",
                                          app=App(display_name="Shop")), LOCAL_USER)
    writers, per_writer = 4, 5
    failures: list[BaseException] = []
    start = threading.Barrier(writers)

    def write(writer: int) -> None:
        try:
            start.wait(timeout=30)
            for index in range(per_writer):
                services.runtime.agents.create(APP, f"w{writer}-{index}", Agent(display_name=f"W{writer}"), LOCAL_USER)
        except BaseException as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures

    with services.database.reading() as connection:
        rows = connection.execute(select(changelogs.c.sequence_number, changelogs.c.create_time_us)
                                  .order_by(changelogs.c.sequence_number)).all()
    assert [row.sequence_number for row in rows] == list(range(1, writers * per_writer + 2))
    times = [row.create_time_us for row in rows]
    assert times == sorted(times) and len(set(times)) == len(times)


@pytest.fixture
def retention(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path, changelog_retention_days=30)


async def test_entries_past_the_retention_are_not_served_and_the_next_change_prunes_them(
        retention: Settings, tmp_path: Path) -> None:
    from convener.server import mcp_servers

    opened = Services.open(retention)
    try:
        async with Client(mcp_servers(opened)["/mcp"]) as client:
            await make_app(client)
            await agent(client, "old")
            with opened.database.transaction() as connection:  # two entries, now 31 days old
                connection.execute(update(changelogs).values(
                    create_time_us=changelogs.c.create_time_us - 31 * 86_400 * 1_000_000))
            assert await entries(client) == []
            await agent(client, "new")
            (kept,) = await entries(client)
            assert summary(kept) == ("Create", "Agent", "/agents/old".replace("old", "new"))
            assert kept["sequenceNumber"] == "3", "numbers go on after pruning"
        with opened.database.reading() as connection:
            assert connection.scalar(select(func.count()).select_from(changelogs)) == 1
    finally:
        opened.close()


async def test_an_apps_changelogs_go_with_it(client: Client, services: Services) -> None:
    await make_app(client)
    await make_app(client, OTHER)
    await agent(client, "a")
    await call_json(client, "delete_app", {"name": APP})
    with services.database.reading() as connection:
        assert connection.scalar(select(func.count()).select_from(changelogs)) == 1
    error_text(await client.call_tool("list_changelogs", {"parent": APP}), "NOT_FOUND")
    await make_app(client)
    assert [e["sequenceNumber"] for e in await entries(client)] == ["1"], "a new app of the name starts again"


async def test_a_run_of_the_draft_names_the_change_it_ran_after(client: Client) -> None:
    await make_app(client)
    await agent(client, "echo", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"})
    await set_root(client, "echo")
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "e1", "evaluation": {
        "displayName": "E1", "golden": {"turns": [{"steps": [
            {"userInput": {"text": "hi"}},
            {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "echo 1: hi"}]}}}]}]}}})
    await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v1", "appVersion": {}})
    # The change that breaks it, made after the version.
    await call_json(client, "update_agent", {"agent": {"name": agent_name("echo"), "pythonAgent": {
        "entryPoint": f"{FIXTURES}:order_checker"}}, "updateMask": "pythonAgent"})
    breaking = (await entries(client))[0]

    draft = await _run(client, {})
    assert draft["changelog"] == breaking["name"]
    assert draft["changelogCreateTime"] == breaking["createTime"]
    assert_matches(EVALUATION_RESULT_VALIDATOR, draft)
    # get_evaluation_result → get_changelog: the change, with the agent before and after it.
    cause = await call_json(client, "get_changelog", {"name": draft["changelog"]})
    assert cause["originalResource"]["pythonAgent"]["entryPoint"].endswith(":echo_agent")
    assert cause["newResource"]["pythonAgent"]["entryPoint"].endswith(":order_checker")

    versioned = await _run(client, {"appVersion": f"{APP}/versions/v1"})
    assert "changelog" not in versioned and "changelogCreateTime" not in versioned
    assert len(await entries(client)) == len(await entries(client, filter="create_time > \"2000-01-01T00:00:00Z\""))


async def _run(client: Client, extra: dict[str, Any]) -> dict[str, Any]:
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": [f"{APP}/evaluations/e1"],
                                                           **extra})
    done = await call_json(client, "wait_operation", {"name": operation["name"], "timeout": "60s"})
    assert done["done"] is True, done
    results = await call_json(client, "list_evaluation_results", {"parent": f"{APP}/evaluations/e1"})
    newest: dict[str, Any] = results["evaluationResults"][0]
    return await call_json(client, "get_evaluation_result", {"name": newest["name"]})
