"""The app tools over MCP: create, get, list, update and delete, on every store backend."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client
from sqlalchemy import func, select

from convener.api.protojson import Timestamp
from convener.ces.importing import import_conversations
from convener.ces.names import AppName
from convener.ces.tables import apps as apps_table
from convener.ces.tables import conversations as conversations_table
from convener.services import Services

pytestmark = pytest.mark.anyio

LOCATION = "projects/p/locations/l"


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def fails(client: Client, tool: str, arguments: dict[str, Any], code: str) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"{code}: "), text
    return text


async def create(client: Client, app_id: str | None = None, parent: str = LOCATION, **app: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {"parent": parent, "app": app}
    if app_id is not None:
        arguments["appId"] = app_id
    return await ok(client, "create_app", arguments)


async def list_all(client: Client, page_size: int, **arguments: Any) -> tuple[list[dict[str, Any]], int]:
    """Every app of a listing, following nextPageToken to the end; and the number of pages."""
    found: list[dict[str, Any]] = []
    pages = 0
    token: str | None = None
    while True:
        request = {"parent": LOCATION, "pageSize": page_size, **arguments}
        if token:
            request["pageToken"] = token
        page = await ok(client, "list_apps", request)
        pages += 1
        assert len(page.get("apps", [])) <= page_size
        found.extend(page.get("apps", []))
        token = page.get("nextPageToken")
        if not token:
            return found, pages
        assert pages < 100


# --- create and get -----------------------------------------------------------------------------


async def test_create_app_with_an_id_names_it_under_the_parent(client: Client) -> None:
    before = Timestamp.now()
    app = await create(client, "support-bot", displayName="Support", description="Answers questions")
    assert app["name"] == f"{LOCATION}/apps/support-bot"
    assert app["displayName"] == "Support"
    assert app["description"] == "Answers questions"
    assert app["createTime"] == app["updateTime"]
    assert Timestamp.parse(app["createTime"]) >= Timestamp.from_micros(before.to_micros())
    assert app["etag"]
    assert set(app) == {"name", "displayName", "description", "createTime", "updateTime", "etag"}
    assert await ok(client, "get_app", {"name": app["name"]}) == app


async def test_create_app_without_an_id_generates_one(client: Client) -> None:
    first = await create(client, displayName="One")
    second = await create(client)
    for app in (first, second):
        assert re.fullmatch(rf"{LOCATION}/apps/[0-9a-f]{{32}}", app["name"]), app["name"]
    assert first["name"] != second["name"]
    assert "displayName" not in second
    assert await ok(client, "get_app", {"name": second["name"]}) == second


async def test_create_app_ignores_the_name_and_output_only_fields_it_is_given(client: Client) -> None:
    app = await create(
        client, "mine", name=f"{LOCATION}/apps/other", createTime="2000-01-01T00:00:00Z",
        updateTime="2000-01-01T00:00:00Z", etag="chosen", displayName="Mine",
    )
    assert app["name"] == f"{LOCATION}/apps/mine"
    assert app["createTime"] != "2000-01-01T00:00:00Z"
    assert app["etag"] != "chosen"
    await fails(client, "get_app", {"name": f"{LOCATION}/apps/other"}, "NOT_FOUND")


async def test_create_app_twice_with_the_same_id_is_already_exists(client: Client) -> None:
    app = await create(client, "twice", displayName="First")
    text = await fails(client, "create_app", {"parent": LOCATION, "appId": "twice", "app": {"displayName": "Second"}},
                       "ALREADY_EXISTS")
    assert f"{LOCATION}/apps/twice" in text
    assert await ok(client, "get_app", {"name": app["name"]}) == app


async def test_the_same_app_id_may_be_used_in_other_locations(client: Client) -> None:
    here = await create(client, "same")
    there = await create(client, "same", parent="projects/p/locations/elsewhere")
    assert here["name"] != there["name"]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"parent": LOCATION, "appId": "-bad", "app": {}}, "appId"),
        ({"parent": LOCATION, "appId": "has space", "app": {}}, "appId"),
        ({"parent": LOCATION, "appId": "x" * 129, "app": {}}, "appId"),
        ({"parent": "projects/p", "app": {}}, "parent"),
        ({"parent": f"{LOCATION}/apps/a", "app": {}}, "parent"),
        ({"parent": LOCATION}, "app"),
        ({"parent": LOCATION, "app": {"displayName": "x" * 513}}, "displayName"),
        ({"parent": LOCATION, "app": {"description": "x" * 16_385}}, "description"),
        ({"parent": LOCATION, "app": {"colour": "red"}}, "colour"),
        ({"parent": LOCATION, "app": {"displayName": 5}}, "displayName"),
    ],
)
async def test_create_app_rejects_invalid_requests(client: Client, arguments: dict[str, Any], fragment: str) -> None:
    text = await fails(client, "create_app", arguments, "INVALID_ARGUMENT")
    assert fragment in text
    assert (await ok(client, "list_apps", {"parent": LOCATION})) == {}


async def test_display_name_and_description_at_their_limits_are_accepted(client: Client) -> None:
    app = await create(client, "long", displayName="x" * 512, description="y" * 16_384)
    assert len(app["displayName"]) == 512
    assert len(app["description"]) == 16_384


async def test_get_app_of_a_missing_app_is_not_found(client: Client) -> None:
    text = await fails(client, "get_app", {"name": f"{LOCATION}/apps/missing"}, "NOT_FOUND")
    assert f"{LOCATION}/apps/missing" in text
    await fails(client, "get_app", {"name": "apps/missing"}, "INVALID_ARGUMENT")


# --- list -----------------------------------------------------------------------------------------


async def test_list_apps_pages_through_every_app_once_in_id_order(client: Client) -> None:
    ids = [f"app-{n:02d}" for n in (7, 3, 11, 0, 5, 9, 1)]
    for app_id in ids:
        await create(client, app_id, displayName=f"App {app_id}")
    await create(client, "not-here", parent="projects/p/locations/elsewhere")
    for page_size in (1, 2, 3, 7, 8, 1000, 5000):
        found, pages = await list_all(client, page_size)
        assert [app["name"].rsplit("/", 1)[1] for app in found] == sorted(ids)
        assert pages == -(-len(ids) // page_size)


async def test_the_last_page_has_no_next_page_token(client: Client) -> None:
    for app_id in ("a", "b", "c", "d"):
        await create(client, app_id)
    first = await ok(client, "list_apps", {"parent": LOCATION, "pageSize": 2})
    assert [app["name"][-1] for app in first["apps"]] == ["a", "b"]
    second = await ok(client, "list_apps", {"parent": LOCATION, "pageSize": 2, "pageToken": first["nextPageToken"]})
    assert [app["name"][-1] for app in second["apps"]] == ["c", "d"]
    assert "nextPageToken" not in second


async def test_page_size_may_change_between_pages(client: Client) -> None:
    for app_id in ("a", "b", "c", "d", "e"):
        await create(client, app_id)
    first = await ok(client, "list_apps", {"parent": LOCATION, "pageSize": 1})
    rest = await ok(client, "list_apps", {"parent": LOCATION, "pageSize": 10, "pageToken": first["nextPageToken"]})
    assert [app["name"][-1] for app in first["apps"] + rest["apps"]] == ["a", "b", "c", "d", "e"]


async def test_list_apps_of_an_empty_location_is_empty(client: Client) -> None:
    assert await ok(client, "list_apps", {"parent": LOCATION}) == {}


async def test_list_apps_filters_on_display_name(client: Client) -> None:
    for app_id, display in [("a", "Blue"), ("b", "Red"), ("c", "Blue"), ("d", "blue"), ("e", "Blue sky"), ("f", "Blue")]:
        await create(client, app_id, displayName=display)
    found, _ = await list_all(client, 2, filter='displayName = "Blue"')
    assert [app["name"][-1] for app in found] == ["a", "c", "f"]
    found, _ = await list_all(client, 2, filter='displayName != "Blue"')
    assert [app["name"][-1] for app in found] == ["b", "d", "e"]
    found, _ = await list_all(client, 10, filter='displayName = "Nothing"')
    assert found == []


async def test_a_page_token_only_continues_its_own_listing(client: Client) -> None:
    for app_id, display in [("a", "x"), ("b", "x"), ("c", "x")]:
        await create(client, app_id, displayName=display)
    first = await ok(client, "list_apps", {"parent": LOCATION, "pageSize": 1, "filter": 'displayName = "x"'})
    token = first["nextPageToken"]
    await fails(client, "list_apps", {"parent": LOCATION, "pageSize": 1, "pageToken": token}, "INVALID_ARGUMENT")
    await fails(
        client, "list_apps",
        {"parent": "projects/p/locations/m", "pageSize": 1, "filter": 'displayName = "x"', "pageToken": token},
        "INVALID_ARGUMENT",
    )
    await fails(client, "list_apps", {"parent": LOCATION, "pageToken": token[:-2]}, "INVALID_ARGUMENT")
    await fails(client, "list_apps", {"parent": LOCATION, "pageToken": "garbage"}, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"parent": LOCATION, "pageSize": -1}, "pageSize"),
        ({"parent": LOCATION, "filter": "colour = 1"}, "colour"),
        ({"parent": f"{LOCATION}/apps/a"}, "parent"),
        ({}, "parent"),
    ],
)
async def test_list_apps_rejects_invalid_requests(client: Client, arguments: dict[str, Any], fragment: str) -> None:
    assert fragment in await fails(client, "list_apps", arguments, "INVALID_ARGUMENT")


# --- update ---------------------------------------------------------------------------------------


async def test_update_app_changes_only_the_masked_fields(client: Client) -> None:
    app = await create(client, "u", displayName="Old name", description="Old description")
    updated = await ok(
        client, "update_app",
        {"app": {"name": app["name"], "displayName": "New name", "description": "Ignored"}, "updateMask": "displayName"},
    )
    assert updated["displayName"] == "New name"
    assert updated["description"] == "Old description"
    assert updated["createTime"] == app["createTime"]
    assert Timestamp.parse(updated["updateTime"]) > Timestamp.parse(app["updateTime"])
    assert updated["etag"] != app["etag"]
    assert await ok(client, "get_app", {"name": app["name"]}) == updated

    again = await ok(
        client, "update_app",
        {"app": {"name": app["name"], "displayName": "Ignored", "description": "New description"},
         "updateMask": "description"},
    )
    assert (again["displayName"], again["description"]) == ("New name", "New description")
    assert Timestamp.parse(again["updateTime"]) > Timestamp.parse(updated["updateTime"])
    assert again["etag"] not in (app["etag"], updated["etag"])


async def test_update_app_without_a_mask_or_with_a_star_replaces_every_updatable_field(client: Client) -> None:
    app = await create(client, "u", displayName="Name", description="Description")
    updated = await ok(client, "update_app", {"app": {"name": app["name"], "displayName": "Only"}})
    assert updated["displayName"] == "Only"
    assert "description" not in updated
    starred = await ok(client, "update_app", {"app": {"name": app["name"], "description": "D"}, "updateMask": "*"})
    assert "displayName" not in starred
    assert starred["description"] == "D"


async def test_a_mask_of_several_fields_with_spaces_is_accepted(client: Client) -> None:
    app = await create(client, "u", displayName="a", description="b")
    updated = await ok(
        client, "update_app",
        {"app": {"name": app["name"], "displayName": "c", "description": "d"}, "updateMask": " displayName , description "},
    )
    assert (updated["displayName"], updated["description"]) == ("c", "d")


@pytest.mark.parametrize("mask", ["name", "createTime", "etag", "display_name,bogus", "displayName,updateTime", "*,name"])
async def test_update_app_rejects_masks_naming_other_fields(client: Client, mask: str) -> None:
    app = await create(client, "u", displayName="Same")
    text = await fails(
        client, "update_app", {"app": {"name": app["name"], "displayName": "Changed"}, "updateMask": mask},
        "INVALID_ARGUMENT",
    )
    assert "updateMask" in text
    assert await ok(client, "get_app", {"name": app["name"]}) == app


async def test_update_app_with_a_stale_etag_is_aborted_and_changes_nothing(client: Client) -> None:
    app = await create(client, "u", displayName="v1")
    current = await ok(client, "update_app", {"app": {"name": app["name"], "displayName": "v2", "etag": app["etag"]}})
    text = await fails(
        client, "update_app", {"app": {"name": app["name"], "displayName": "v3", "etag": app["etag"]}}, "ABORTED"
    )
    assert app["name"] in text
    assert await ok(client, "get_app", {"name": app["name"]}) == current
    newer = await ok(client, "update_app", {"app": {"name": app["name"], "displayName": "v3", "etag": current["etag"]}})
    assert newer["displayName"] == "v3"


async def test_update_app_of_a_missing_app_is_not_found(client: Client) -> None:
    await fails(client, "update_app", {"app": {"name": f"{LOCATION}/apps/missing", "displayName": "x"}}, "NOT_FOUND")
    await fails(client, "update_app", {"app": {"displayName": "x"}}, "INVALID_ARGUMENT")
    await fails(client, "update_app", {"app": {"name": "apps/x", "displayName": "x"}}, "INVALID_ARGUMENT")


async def test_update_app_checks_text_limits(client: Client) -> None:
    app = await create(client, "u", displayName="ok")
    await fails(client, "update_app", {"app": {"name": app["name"], "displayName": "x" * 513}}, "INVALID_ARGUMENT")
    assert await ok(client, "get_app", {"name": app["name"]}) == app


async def test_updates_show_in_listings_and_filters(client: Client) -> None:
    app = await create(client, "u", displayName="Before")
    await ok(client, "update_app", {"app": {"name": app["name"], "displayName": "After"}, "updateMask": "displayName"})
    listed = await ok(client, "list_apps", {"parent": LOCATION, "filter": 'displayName = "After"'})
    assert [a["name"] for a in listed["apps"]] == [app["name"]]
    assert await ok(client, "list_apps", {"parent": LOCATION, "filter": 'displayName = "Before"'}) == {}


# --- delete ---------------------------------------------------------------------------------------


def _record(services: Services, app: str, *conversation_ids: str) -> None:
    lines = [
        json.dumps({
            "name": f"{app}/conversations/{conversation_id}",
            "turns": [{"messages": [{"role": "user", "chunks": [{"text": conversation_id}],
                                     "eventTime": "2024-01-01T00:00:00Z"}]}],
        })
        for conversation_id in conversation_ids
    ]
    report = import_conversations(services.apps, services.conversations, lines, AppName.parse(app))
    assert (report.created, report.errors) == (len(conversation_ids), [])


def _conversations_in_store(services: Services) -> int:
    with services.database.transaction() as connection:
        return int(connection.scalar(select(func.count()).select_from(conversations_table)) or 0)


async def test_delete_app_deletes_its_conversations_and_only_those(client: Client, services: Services) -> None:
    doomed = await create(client, "doomed")
    kept = await create(client, "kept")
    _record(services, doomed["name"], "c1", "c2", "c3")
    _record(services, kept["name"], "c1", "k2")
    assert _conversations_in_store(services) == 5
    listed = await ok(client, "list_conversations", {"parent": doomed["name"]})
    assert len(listed["conversations"]) == 3

    assert await ok(client, "delete_app", {"name": doomed["name"]}) == {}

    await fails(client, "get_app", {"name": doomed["name"]}, "NOT_FOUND")
    await fails(client, "list_conversations", {"parent": doomed["name"]}, "NOT_FOUND")
    await fails(client, "get_conversation", {"name": f"{doomed['name']}/conversations/c1"}, "NOT_FOUND")
    assert _conversations_in_store(services) == 2
    remaining = await ok(client, "list_conversations", {"parent": kept["name"]})
    assert sorted(c["name"] for c in remaining["conversations"]) == [
        f"{kept['name']}/conversations/c1", f"{kept['name']}/conversations/k2"
    ]

    # An app created again under the same ID starts empty.
    await create(client, "doomed")
    assert await ok(client, "list_conversations", {"parent": doomed["name"]}) == {}


async def test_delete_app_with_a_stale_etag_is_aborted_and_deletes_nothing(client: Client, services: Services) -> None:
    app = await create(client, "d", displayName="v1")
    _record(services, app["name"], "c1")
    current = await ok(client, "update_app", {"app": {"name": app["name"], "displayName": "v2"}})
    text = await fails(client, "delete_app", {"name": app["name"], "etag": app["etag"]}, "ABORTED")
    assert app["name"] in text
    assert await ok(client, "get_app", {"name": app["name"]}) == current
    assert _conversations_in_store(services) == 1

    assert await ok(client, "delete_app", {"name": app["name"], "etag": current["etag"]}) == {}
    await fails(client, "get_app", {"name": app["name"]}, "NOT_FOUND")
    assert _conversations_in_store(services) == 0


async def test_delete_app_of_a_missing_app_is_not_found(client: Client, services: Services) -> None:
    text = await fails(client, "delete_app", {"name": f"{LOCATION}/apps/missing"}, "NOT_FOUND")
    assert f"{LOCATION}/apps/missing" in text
    app = await create(client, "once")
    await ok(client, "delete_app", {"name": app["name"]})
    await fails(client, "delete_app", {"name": app["name"]}, "NOT_FOUND")
    await fails(client, "delete_app", {"name": "apps/once"}, "INVALID_ARGUMENT")
    with services.database.transaction() as connection:
        assert connection.scalar(select(func.count()).select_from(apps_table)) == 0
