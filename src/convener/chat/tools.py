"""MCP tools of the chat service (chatmcp.googleapis.com), with the OAuth scopes Google asks of each."""

from __future__ import annotations

from convener.chat.models import (
    ListChatMessagesRequest,
    ListChatMessagesResponse,
    ListMembershipsRequest,
    ListMembershipsResponse,
    SearchConversationsRequest,
    SearchConversationsResponse,
    SearchMessagesRequest,
    SearchMessagesResponse,
    SendMessageRequest,
    SendMessageResponse,
)
from convener.chat.service import ChatService
from convener.tooling import CREATES, READ_ONLY, ToolRegistry, ToolSpec

READ_MESSAGES = ("chat.messages.readonly", "chat.messages")
SEND_MESSAGES = ("chat.messages.create", "chat.messages")
READ_SPACES = ("chat.spaces.readonly", "chat.spaces")
READ_MEMBERSHIPS = ("chat.memberships.readonly", "chat.memberships")


def chat_tools(chat: ChatService) -> ToolRegistry:
    registry = ToolRegistry("chat")
    everyday = registry.group("chat")
    everyday.add(ToolSpec(
        "list_messages", "List messages",
        "Retrieves messages from a specified Google Chat conversation (Space, direct message (DM) or group DM) "
        "in Markdown format. Allows filtering by thread, time range, and number of messages. Additionally, the "
        "next page of messages can be retrieved to allow for more context. Private messages (messages only "
        "visible to a single user) are filtered out.",
        ListChatMessagesRequest, ListChatMessagesResponse, READ_ONLY, chat.list_messages, scopes=READ_MESSAGES,
    ))
    everyday.add(ToolSpec(
        "search_messages", "Search messages",
        "Searches for Google Chat messages using keywords and filters, returned in Markdown. Works across all "
        "conversations the caller is a member of, or can be scoped to one conversation. Keywords are matched "
        "as words by the full-text index; RELEVANCE_DESC (the default with keywords) ranks by it.",
        SearchMessagesRequest, SearchMessagesResponse, READ_ONLY, chat.search_messages, scopes=READ_MESSAGES,
    ))
    everyday.add(ToolSpec(
        "search_conversations", "Search conversations",
        "Searches for Google Chat conversations (named spaces, direct messages (DMs) or group chats) by display "
        "name or participants, to find conversation IDs. With only participants: the 1:1 DM (one participant) "
        "or group chats (several) with exactly those people and the caller. With only spaceNameQuery: "
        "conversations whose display name contains it, case-insensitively. With both: found by participants, "
        "then filtered by name. With neither: every conversation the caller is a member of. Only the caller's "
        "conversations are listed, most recently active first. An empty page with a nextPageToken does not "
        "mean there are no more results.",
        SearchConversationsRequest, SearchConversationsResponse, READ_ONLY, chat.search_conversations,
        scopes=READ_SPACES,
    ))
    everyday.add(ToolSpec(
        "send_message", "Send message",
        "Sends a Google Chat message to a conversation, as the caller. Takes a conversation ID, an optional "
        "thread ID (a new thread when unset) and the text in Google Chat's Markdown subset; returns the "
        "created message.",
        SendMessageRequest, SendMessageResponse, CREATES, chat.send_message, scopes=SEND_MESSAGES,
    ))
    everyday.add(ToolSpec(
        "list_memberships", "List memberships",
        "Lists the members of a conversation the caller is a member of, as the Chat API's spaces.members.list.",
        ListMembershipsRequest, ListMembershipsResponse, READ_ONLY, chat.list_memberships, scopes=READ_MEMBERSHIPS,
    ))
    return registry
