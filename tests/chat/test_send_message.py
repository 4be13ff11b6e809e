"""send_message: a message in the caller's name, rendered to Markdown, readable at once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from mcp import Client

from convener.auth.caller import Caller
from convener.chat.importing.writer import ChatImporter
from convener.server import mcp_servers
from convener.services import Services
from tests.chat.conftest import space_of, workspace
from tests.e2e.conftest import CHAT_MESSAGE_VALIDATOR, assert_matches, error_text, structured

pytestmark = pytest.mark.anyio


@pytest.fixture
def imported(services: Services) -> Iterator[Services]:
    ChatImporter(services.database).run(workspace())
    yield services


@pytest.fixture
async def ana(imported: Services) -> AsyncIterator[Client]:
    async with Client(mcp_servers(imported, default_caller=Caller("users/ana@example.com"))["/mcp"]) as client:
        yield client


async def test_a_sent_message_is_returned_and_listed_first(ana: Client, imported: Services) -> None:
    general = space_of(imported, "C-GENERAL")

    sent = structured(await ana.call_tool("send_message", {
        "conversationId": general, "messageText": "*ship it* _today_ ~maybe~ <users/ben> see <https://x.test|docs>"}))

    message = sent["message"]
    assert_matches(CHAT_MESSAGE_VALIDATOR, message)
    assert message["plaintextBody"] == "**ship it** *today* ~~maybe~~ @Ben Okafor see [docs](https://x.test)"
    assert message["sender"]["userId"] == "users/ana" and message["threadedReply"] is False
    listed = structured(await ana.call_tool("list_messages", {"conversationId": general, "pageSize": 1}))
    assert listed["messages"] == [message]


async def test_a_reply_joins_the_thread(ana: Client, imported: Services) -> None:
    general = space_of(imported, "C-GENERAL")
    first = structured(await ana.call_tool("send_message", {"conversationId": general, "messageText": "question"}))
    thread = first["message"]["threadId"]

    reply = structured(await ana.call_tool("send_message", {"conversationId": general, "threadId": thread,
                                                            "messageText": "answer"}))

    assert reply["message"]["threadId"] == thread and reply["message"]["threadedReply"] is True
    in_thread = structured(await ana.call_tool("list_messages", {"conversationId": general, "threadId": thread}))
    assert [m["plaintextBody"] for m in in_thread["messages"]] == ["answer", "question"]


async def test_sending_is_refused_where_the_caller_may_not_write(ana: Client, imported: Services) -> None:
    secret = space_of(imported, "C-SECRET")
    general = space_of(imported, "C-GENERAL")

    error_text(await ana.call_tool("send_message", {"conversationId": secret, "messageText": "hi"}), "NOT_FOUND")
    error_text(await ana.call_tool("send_message", {"conversationId": general, "messageText": "  "}), "INVALID_ARGUMENT")
    error_text(await ana.call_tool("send_message", {"conversationId": general, "messageText": "x" * 5000}),
               "INVALID_ARGUMENT")
    error_text(await ana.call_tool("send_message", {"conversationId": general, "threadId": f"{general}/threads/nope",
                                                    "messageText": "hi"}), "NOT_FOUND")
    error_text(await ana.call_tool("send_message", {"conversationId": general,
                                                    "threadId": f"{secret}/threads/s1", "messageText": "hi"}),
               "INVALID_ARGUMENT")
    with imported.database.reading() as connection:
        from sqlalchemy import func, select

        from convener.chat.tables import messages
        assert connection.scalar(select(func.count()).where(messages.c.space_id == secret.split("/")[1])) == 5


async def test_the_local_user_without_an_identity_is_told_how_to_get_one(imported: Services) -> None:
    async with Client(mcp_servers(imported)["/mcp"]) as local:
        text = error_text(await local.call_tool("list_messages", {"conversationId": "spaces/x"}), "PERMISSION_DENIED")
    assert "--as" in text and "create-key" in text


async def test_a_user_unknown_to_chat_sees_nothing(imported: Services) -> None:
    async with Client(mcp_servers(imported, default_caller=Caller("users/stranger"))["/mcp"]) as stranger:
        body = structured(await stranger.call_tool("search_conversations", {}))
        assert body == {}
        error_text(await stranger.call_tool("list_messages", {"conversationId": space_of(imported, "C-GENERAL")}),
                   "NOT_FOUND")
