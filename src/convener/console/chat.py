"""The console's chat pages: the signed-in user's conversations (``search_conversations``), a conversation's
messages grouped into threads (``list_messages``, paged, with its members from ``list_memberships``), one
thread, and a search of messages with ``search_messages``'s parameters. Messages are the tools' Markdown,
rendered by ``markup.markdown_html`` (no raw HTML, no images, links only to http(s) and mailto).

URLs mirror the chat's resource names: ``/console/spaces``, ``/console/spaces/{space}``,
``/console/spaces/{space}/threads/{thread}``, and the search across conversations at
``/console/spaces/-/messages`` (AIP-159's ``-`` for "every parent")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from convener.api.errors import Code
from convener.chat.models import (
    ChatAttachmentMetadata,
    ChatMessage,
    ListChatMessagesResponse,
    ListMembershipsResponse,
    OrderBy,
    QuotedMessageMetadata,
    ReactionSummary,
    SearchConversationsResponse,
    SearchMessagesResponse,
)
from convener.console.access import Viewer
from convener.console.markup import markdown_html
from convener.console.present import when
from convener.console.views import Console, page_link

ORDERS = tuple(order.value for order in OrderBy if order is not OrderBy.ORDER_BY_UNSPECIFIED)
SEARCH_TEXT_FIELDS = ("conversationId", "sender", "startTime", "endTime", "conversationIncludesUser")
SEARCH_FLAGS = ("isUnread", "hasLink", "mentionsMe")
"""search_messages' booleans: on the page "any", "true" or "false" (anything else is the tool's to refuse)."""


@dataclass(frozen=True)
class MessageView:
    """A message as its page shows it."""

    name: str
    sender: str
    sender_id: str
    time: str
    timestamp: str
    html: Markup
    thread: str
    reply: bool
    reactions: list[ReactionSummary]
    attachments: list[ChatAttachmentMetadata]
    quote: QuotedMessageMetadata | None

    @property
    def space(self) -> str:
        return "/".join(self.name.split("/")[:2])


@dataclass
class ThreadView:
    """A message that is no thread's, or a thread: its first message when this page holds it, and the replies
    on this page, oldest first."""

    thread: str
    head: MessageView | None = None
    replies: list[MessageView] = field(default_factory=list)


def message_view(message: ChatMessage) -> MessageView:
    sender = message.sender
    created = message.create_time
    return MessageView(
        name=message.message_id or "",
        sender=(sender.display_name or sender.user_id or "") if sender else "",
        sender_id=(sender.user_id or "") if sender else "",
        time=when(created),
        timestamp=str(created or ""),
        html=markdown_html(message.plaintext_body),
        thread=message.thread_id or "",
        reply=bool(message.threaded_reply),
        reactions=message.reaction_summaries or [],
        attachments=message.attachments or [],
        quote=message.quoted_message_metadata,
    )


def threads(messages: list[ChatMessage]) -> list[ThreadView]:
    """A page of messages (newest first, as list_messages gives them) grouped into threads, each where its
    newest message on the page is; the replies in a thread oldest first."""
    groups: dict[str, ThreadView] = {}
    for message in messages:
        view = message_view(message)
        key = view.thread or view.name
        group = groups.setdefault(key, ThreadView(thread=view.thread))
        if view.reply:
            group.replies.insert(0, view)
        else:
            group.head = view
    return list(groups.values())


def _size(value: str | None) -> int | str | None:
    """A page size as given: a number when it reads as one, else the text, for the tool to refuse."""
    if not value:
        return None
    return int(value) if value.isdigit() and len(value) < 10 else value


class ChatPages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def spaces(self, request: Request, viewer: Viewer) -> Response:
        query = request.query_params
        arguments: dict[str, Any] = {}
        if name := query.get("spaceNameQuery", "").strip():
            arguments["spaceNameQuery"] = name
        if (size := _size(query.get("pageSize"))) is not None:
            arguments["pageSize"] = size
        if token := query.get("pageToken"):
            arguments["pageToken"] = token
        found = await self.console.tools.call("search_conversations", arguments, viewer.caller,
                                              SearchConversationsResponse)
        return self.console.render(request, "chat_spaces.html", viewer, conversations=found.conversations or [],
                                   name_query=name, next_page=page_link(request, found.next_page_token),
                                   first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def space(self, request: Request, viewer: Viewer) -> Response:
        space = f"spaces/{request.path_params['space']}"
        return await self._messages(request, viewer, space, "")

    async def thread(self, request: Request, viewer: Viewer) -> Response:
        space = f"spaces/{request.path_params['space']}"
        return await self._messages(request, viewer, space, f"{space}/threads/{request.path_params['thread']}")

    async def _messages(self, request: Request, viewer: Viewer, space: str, thread: str) -> Response:
        query = request.query_params
        arguments: dict[str, Any] = {"conversationId": space}
        if thread:
            arguments["threadId"] = thread
        for name in ("startTime", "endTime", "pageToken"):
            if value := query.get(name):
                arguments[name] = value
        if (size := _size(query.get("pageSize"))) is not None:
            arguments["pageSize"] = size
        listed = await self.console.tools.call("list_messages", arguments, viewer.caller, ListChatMessagesResponse)
        members = []
        if self.console.tools.may_call("list_memberships", viewer.caller):
            memberships = await self.console.tools.call("list_memberships", {"parent": space}, viewer.caller,
                                                        ListMembershipsResponse)
            members = [membership.member for membership in memberships.memberships or [] if membership.member]
        return self.console.render(
            request, "chat_space.html", viewer, space=space, thread=thread,
            threads=threads(listed.messages or []), members=members,
            next_page=page_link(request, listed.next_page_token),
            first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def search(self, request: Request, viewer: Viewer) -> Response:
        query = request.query_params
        keywords = [word for text in query.getlist("keywords") for word in text.split()]
        parameters: dict[str, Any] = {}
        if keywords:
            parameters["keywords"] = keywords
        for name in SEARCH_TEXT_FIELDS:
            if value := query.get(name, "").strip():
                parameters[name] = value
        for name in SEARCH_FLAGS:
            if (value := query.get(name, "")) and value != "any":
                parameters[name] = value  # "true"/"false"; the tool refuses anything else
        names = [name.strip() for text in query.getlist("spaceDisplayNames") for name in text.split(",")]
        if names := [name for name in names if name]:
            parameters["spaceDisplayNames"] = names
        arguments: dict[str, Any] = {"searchParameters": parameters}
        if order := query.get("orderBy"):
            arguments["orderBy"] = order
        if (size := _size(query.get("pageSize"))) is not None:
            arguments["pageSize"] = size
        if token := query.get("pageToken"):
            arguments["pageToken"] = token
        asked = bool(parameters) or "orderBy" in arguments
        form = {name: query.get(name, "") for name in (*SEARCH_TEXT_FIELDS, *SEARCH_FLAGS, "orderBy", "pageSize")}
        form["keywords"] = " ".join(keywords)
        form["spaceDisplayNames"] = ", ".join(names)
        messages: list[MessageView] = []
        problem, next_page = "", ""
        if asked:
            found, problem = await self.console.call_for_form("search_messages", arguments, viewer,
                                                              SearchMessagesResponse,
                                                              (Code.INVALID_ARGUMENT, Code.UNIMPLEMENTED))
            if found is not None:
                messages = [message_view(message) for message in found.messages or []]
                next_page = page_link(request, found.next_page_token)
        return self.console.render(
            request, "chat_search.html", viewer, status=400 if problem else 200, form=form, orders=ORDERS,
            asked=asked, messages=messages, problem=problem, next_page=next_page,
            first_page=page_link(request, "") if query.get("pageToken") else "")
