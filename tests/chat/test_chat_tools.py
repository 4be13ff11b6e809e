"""search_messages, search_conversations, send_message and list_memberships, as one user at a time."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.chat.conftest import Workspace, at
from tests.e2e.conftest import CHAT_MESSAGE_VALIDATOR, assert_matches, error_text, rfc3339, structured

pytestmark = pytest.mark.anyio


async def search(client: Client, order: str | None = None, page_size: int | None = None,
                 **parameters: Any) -> list[dict[str, Any]]:
    """Every page of search_messages, each message checked against the seed's ChatMessage."""
    found: list[dict[str, Any]] = []
    token = None
    for _ in range(100):
        arguments: dict[str, Any] = {"searchParameters": parameters}
        if order:
            arguments["orderBy"] = order
        if page_size:
            arguments["pageSize"] = page_size
        if token:
            arguments["pageToken"] = token
        body = structured(await client.call_tool("search_messages", arguments))
        for message in body.get("messages", []):
            assert_matches(CHAT_MESSAGE_VALIDATOR, message)
        found.extend(body.get("messages", []))
        token = body.get("nextPageToken")
        if not token:
            return found
    raise AssertionError("search_messages kept returning pages")


# ---------------------------------------------------------------- search_messages


async def test_keywords_find_only_messages_with_every_keyword_in_the_caller_s_spaces(ana: Client) -> None:
    found = await search(ana, keywords=["status", "update"], page_size=7)

    bodies = {message["plaintextBody"] for message in found}
    assert "yes, status update after" in bodies  # the DM
    assert len([body for body in bodies if body.startswith("status update ")]) == 39  # root 7 says other words
    assert not any("launch" in body for body in bodies)


async def test_a_space_the_caller_is_not_in_is_never_searched(ana: Client, ben: Client, chat_workspace: Workspace) -> None:
    assert await search(ana, keywords=["launch"]) == []
    assert len(await search(ben, keywords=["launch"])) == 5
    hidden = error_text(await ana.call_tool("search_messages", {"searchParameters": {
        "keywords": ["launch"], "conversationId": chat_workspace.secret}}), "NOT_FOUND")
    assert "launch" not in hidden


async def test_relevance_ranks_the_message_that_says_it_most_first(ana: Client) -> None:
    found = await search(ana, keywords=["runbook"])

    assert [message["messageId"].rsplit("/", 1)[1] for message in found] == ["g007"]


@pytest.mark.parametrize("order", ["CREATE_TIME_DESC", "CREATE_TIME_ASC", "RELEVANCE_DESC"])
async def test_every_order_pages_through_the_same_messages(ana: Client, order: str) -> None:
    found = await search(ana, order, 4, keywords=["reply"])

    assert len(found) == 16 and len({message["messageId"] for message in found}) == 16
    times = [message["createTime"] for message in found]
    if order == "CREATE_TIME_DESC":
        assert times == sorted(times, reverse=True)
    if order == "CREATE_TIME_ASC":
        assert times == sorted(times)


async def test_filters_on_sender_link_mentions_conversation_and_time(ana: Client, chat_workspace: Workspace) -> None:
    by_email = await search(ana, sender="Ben@example.com", conversationId=chat_workspace.general)
    by_name = await search(ana, sender="users/ben", conversationId=chat_workspace.general)
    assert by_email == by_name and by_email
    assert {message["sender"]["userId"] for message in by_email} == {"users/ben"}

    assert [m["messageId"].rsplit("/", 1)[1] for m in await search(ana, hasLink=True)] == ["g007"]
    assert await search(ana, mentionsMe=True) == []
    assert [m["messageId"].rsplit("/", 1)[1] for m in await search(ana, mentionsMe=False, keywords=["ping"])] == ["g007"]

    window = await search(ana, conversationId=chat_workspace.general, startTime=rfc3339(at(10)), endTime=rfc3339(at(12)))
    assert [m["plaintextBody"] for m in window] == ["reply 1 to 5", "reply 0 to 5", "status update 5 **bold 5**"]

    in_dm = await search(ana, conversationIncludesUser="users/ben", spaceDisplayNames=["general"], keywords=["lunch"])
    assert in_dm == []


async def test_mentions_me_finds_the_messages_that_mention_the_caller(chat_workspace: Workspace) -> None:
    from convener.auth.caller import Caller
    from convener.server import mcp_servers

    async with Client(mcp_servers(chat_workspace.services, default_caller=Caller("users/cy"))["/mcp"]) as cy:
        assert [m["messageId"].rsplit("/", 1)[1] for m in await search(cy, mentionsMe=True)] == ["g007"]


@pytest.mark.parametrize(("arguments", "code", "needle"), [
    ({}, "INVALID_ARGUMENT", "searchParameters"),
    ({"searchParameters": {"isUnread": True}}, "UNIMPLEMENTED", "isUnread"),
    ({"searchParameters": {"keywords": ["x"] * 50}}, "INVALID_ARGUMENT", "keywords"),
    ({"searchParameters": {"keywords": ["x" * 500]}}, "INVALID_ARGUMENT", "keywords"),
    ({"searchParameters": {"sender": "not a user"}}, "INVALID_ARGUMENT", "sender"),
    ({"searchParameters": {"startTime": "soon"}}, "INVALID_ARGUMENT", "startTime"),
    ({"searchParameters": {}, "orderBy": "LOUDEST"}, "INVALID_ARGUMENT", "orderBy"),
    ({"searchParameters": {}, "pageSize": -3}, "INVALID_ARGUMENT", "pageSize"),
    ({"searchParameters": {}, "pageToken": "x.y"}, "INVALID_ARGUMENT", "pageToken"),
])
async def test_hostile_searches_are_refused_clearly(ana: Client, arguments: dict[str, Any], code: str, needle: str) -> None:
    assert needle in error_text(await ana.call_tool("search_messages", arguments), code)


async def test_full_text_syntax_in_keywords_is_taken_literally(ana: Client) -> None:
    for keyword in ['"', "status OR launch", "NEAR(a b)", "*", "launch*", "-", "a:b", "'); DROP TABLE x; --"]:
        found = await search(ana, keywords=[keyword])
        assert not any("launch" in message["plaintextBody"] for message in found)


# ---------------------------------------------------------------- search_conversations


async def conversations(client: Client, **arguments: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    token = None
    for _ in range(100):
        body = structured(await client.call_tool("search_conversations", {**arguments, **({"pageToken": token} if token else {})}))
        found.extend(body.get("conversations", []))
        token = body.get("nextPageToken")
        if not token:
            return found
    raise AssertionError("search_conversations kept returning pages")


async def test_neither_query_nor_participants_lists_the_caller_s_conversations(ana: Client, chat_workspace: Workspace) -> None:
    found = await conversations(ana, pageSize=1)

    assert {item["conversationId"] for item in found} == {chat_workspace.general, chat_workspace.dm, chat_workspace.group}
    by_id = {item["conversationId"]: item for item in found}
    assert by_id[chat_workspace.dm]["displayName"] == "Ben Okafor"
    assert by_id[chat_workspace.dm]["conversationType"] == "DIRECT_MESSAGE"
    assert by_id[chat_workspace.group]["displayName"] == "Ben Okafor, Cy Park"
    assert by_id[chat_workspace.general] == {"conversationId": chat_workspace.general, "displayName": "general",
                                             "conversationType": "SPACE", "lastActiveTime": rfc3339(at(78))}


async def test_participants_find_the_dm_or_the_group_chat_with_exactly_them(ana: Client, chat_workspace: Workspace) -> None:
    assert [c["conversationId"] for c in await conversations(ana, participants=["ben@example.com"])] == [chat_workspace.dm]
    assert [c["conversationId"] for c in await conversations(ana, participants=["users/ben", "cy@example.com"])] == [
        chat_workspace.group]
    assert await conversations(ana, participants=["cy@example.com"]) == []
    assert await conversations(ana, participants=["nobody@example.com"]) == []


async def test_a_query_matches_display_names_case_insensitively(ana: Client, ben: Client, chat_workspace: Workspace) -> None:
    assert [c["conversationId"] for c in await conversations(ana, spaceNameQuery="GENER")] == [chat_workspace.general]
    assert await conversations(ana, spaceNameQuery="secret") == []
    assert [c["conversationId"] for c in await conversations(ben, spaceNameQuery="secret")] == [chat_workspace.secret]
    assert [c["conversationId"] for c in await conversations(ana, spaceNameQuery="okafor")] == [
        chat_workspace.group, chat_workspace.dm] or {c["conversationId"] for c in await conversations(
            ana, spaceNameQuery="okafor")} == {chat_workspace.group, chat_workspace.dm}
    assert await conversations(ana, spaceNameQuery="%") == []


# ---------------------------------------------------------------- list_memberships


async def test_members_of_a_space_the_caller_is_in(ana: Client, chat_workspace: Workspace) -> None:
    body = structured(await ana.call_tool("list_memberships", {"parent": chat_workspace.group}))

    assert [(m["member"]["name"], m["member"]["displayName"], m["member"]["type"], m["state"], m["role"])
            for m in body["memberships"]] == [
        ("users/ana", "Ana Lima", "HUMAN", "JOINED", "ROLE_MEMBER"),
        ("users/ben", "Ben Okafor", "HUMAN", "JOINED", "ROLE_MEMBER"),
        ("users/cy", "Cy Park", "HUMAN", "JOINED", "ROLE_MEMBER"),
    ]
    assert body["memberships"][0]["name"] == f"{chat_workspace.group}/members/ana"
    error_text(await ana.call_tool("list_memberships", {"parent": chat_workspace.secret}), "NOT_FOUND")
