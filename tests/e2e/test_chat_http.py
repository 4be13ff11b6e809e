"""The chat tools over real HTTP: each API key reads as its user, within its scopes, and nothing more."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from convener.auth.keys import ApiKeys
from convener.chat.importing.writer import ChatImporter
from convener.services import Services
from tests.chat.conftest import LISTED_GENERAL, space_of, workspace
from tests.e2e.conftest import MESSAGES_VALIDATOR, assert_matches, error_text, mcp_http, structured

pytestmark = pytest.mark.anyio


@pytest.fixture
def chat_server(services: Services, http_server: str) -> Iterator[tuple[str, Services]]:
    ChatImporter(services.database).run(workspace())
    yield http_server, services


def key(services: Services, principal: str, *scopes: str) -> str:
    return ApiKeys(services.database).create(principal, scopes or ("*",))[1]


async def test_a_read_only_key_reads_to_the_end_and_cannot_send(chat_server: tuple[str, Services]) -> None:
    url, services = chat_server
    general = space_of(services, "C-GENERAL")
    async with mcp_http(url, key(services, "users/ana", "https://www.googleapis.com/auth/chat.messages.readonly")) as ana:
        seen = 0
        token = None
        while True:
            body = structured(await ana.call_tool("list_messages", {"conversationId": general, "pageSize": 50,
                                                                    **({"pageToken": token} if token else {})}))
            assert_matches(MESSAGES_VALIDATOR, body)
            seen += len(body.get("messages", []))
            token = body.get("nextPageToken")
            if not token:
                break
        assert seen == LISTED_GENERAL

        refused = error_text(await ana.call_tool("send_message", {"conversationId": general, "messageText": "hi"}),
                             "PERMISSION_DENIED")
        assert "chat.messages.create" in refused
        error_text(await ana.call_tool("search_conversations", {}), "PERMISSION_DENIED")


async def test_scopes_open_exactly_their_tools(chat_server: tuple[str, Services]) -> None:
    url, services = chat_server
    general = space_of(services, "C-GENERAL")
    async with mcp_http(url, key(services, "users/ana", "chat.spaces.readonly", "chat.messages.create")) as ana:
        assert structured(await ana.call_tool("search_conversations", {}))["conversations"]
        assert structured(await ana.call_tool("send_message", {"conversationId": general, "messageText": "hi"}))
        error_text(await ana.call_tool("list_messages", {"conversationId": general}), "PERMISSION_DENIED")
        error_text(await ana.call_tool("list_memberships", {"parent": general}), "PERMISSION_DENIED")
    async with mcp_http(url, key(services, "users/ana", "ces")) as ces_only:
        error_text(await ces_only.call_tool("list_messages", {"conversationId": general}), "PERMISSION_DENIED")
    async with mcp_http(url, key(services, "users/ana", "chat")) as ana:
        assert structured(await ana.call_tool("list_memberships", {"parent": general}))["memberships"]


async def test_an_email_key_is_its_user_and_tokens_do_not_cross_keys(chat_server: tuple[str, Services]) -> None:
    url, services = chat_server
    general = space_of(services, "C-GENERAL")
    secret = space_of(services, "C-SECRET")
    async with (
        mcp_http(url, key(services, "users/BEN@example.com", "chat.messages.readonly")) as ben,
        mcp_http(url, key(services, "users/ana", "chat.messages.readonly")) as ana,
    ):
        assert structured(await ben.call_tool("list_messages", {"conversationId": secret}))["messages"]
        token = structured(await ben.call_tool("list_messages", {"conversationId": general, "pageSize": 3}))[
            "nextPageToken"]
        error_text(await ana.call_tool("list_messages", {"conversationId": general, "pageToken": token}),
                   "INVALID_ARGUMENT")
        error_text(await ana.call_tool("list_messages", {"conversationId": secret}), "NOT_FOUND")
        found = structured(await ana.call_tool("search_messages", {"searchParameters": {"keywords": ["launch"]}}))
        assert found == {}


async def test_chat_needs_a_key_even_where_anonymous_callers_are_allowed(services: Services) -> None:
    from convener.auth.caller import ANONYMOUS
    from convener.chat.models import ListChatMessagesRequest

    with pytest.raises(Exception) as raised:
        services.chat.list_messages(ListChatMessagesRequest(conversation_id="spaces/x"), ANONYMOUS)
    assert "PERMISSION_DENIED" in str(raised.value)
