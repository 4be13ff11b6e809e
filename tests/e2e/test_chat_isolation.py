"""A non-member learns nothing about a space, over real HTTP, through any chat tool or argument.

The records workspace of ``tests/chat/conftest.py`` is imported once per backend and served by one server
for the module. ``secret`` is ben's and cy's space; ana shares ``general`` and ``group-abc`` with them and
has a DM with ben. Whatever ana sends that names the secret space, one of its threads, its members or its
words, she gets nothing, or the very error (byte for byte, the name substituted) that a space that does not
exist gets: never a count, a name, a thread ID or a message text of it. Hostile input is refused as
``CODE: message`` (never INTERNAL, never a trace) and leaves the server answering, and what is sent is
served as text that renders as it was typed.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mcp import Client
from mcp.shared.exceptions import MCPError
from sqlalchemy import select

from convener.auth.keys import ApiKeys
from convener.chat.importing.writer import ChatImporter
from convener.chat.records import ImportedConversation, ImportedMessage
from convener.chat.tables import memberships, messages
from convener.config import Settings
from convener.services import Services
from tests.chat.conftest import PEOPLE, RecordsExport, space_of, workspace
from tests.conftest import BACKENDS, CHAT_TOOLS, private_database, serving
from tests.e2e.conftest import (
    CHAT_MESSAGE_VALIDATOR,
    MESSAGES_VALIDATOR,
    assert_matches,
    assert_no_leak,
    error_text,
    mcp_http,
    structured,
)

pytestmark = pytest.mark.anyio

ABSENT = "spaces/C-ABSENT"
"""A space that does not exist: what ana is told about the secret space must be what she is told about it."""
SECRET_WORDS = re.compile(r"launch|codes|0000|secret", re.IGNORECASE)
"""The secret space's name, ID (C-SECRET) and words."""
JSON_RPC_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
CHAT_PATH = "/chat/mcp"
"""The chat service's own endpoint. /mcp serves the same tools (checked below), but with every service's
tools on it a call through the MCP client takes ~20x as long there (~60-100 ms against ~3 ms here)."""


@dataclass(frozen=True)
class ChatServer:
    base_url: str
    services: Services
    ana_key: str
    ben_key: str
    general: str
    secret: str
    dm: str
    group: str

    @property
    def anas(self) -> set[str]:
        return {self.general, self.dm, self.group}


def _secret_state(services: Services, secret: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The secret space's messages (ID, body, sender) and members, as stored."""
    space_id = secret.removeprefix("spaces/")
    with services.database.reading() as connection:
        rows = connection.execute(select(messages.c.message_id, messages.c.body, messages.c.sender_id)
                                  .where(messages.c.space_id == space_id).order_by(messages.c.message_id)).all()
        members = connection.scalars(select(memberships.c.user_id).where(memberships.c.space_id == space_id)
                                     .order_by(memberships.c.user_id)).all()
    return [tuple(row) for row in rows], list(members)


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    directory: Path = tmp_path_factory.mktemp("chat-isolation")
    with private_database(request.param, directory) as url:
        services = Services.open(Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False))
        try:
            ChatImporter(services.database).run(workspace())
            keys = ApiKeys(services.database)
            secret = space_of(services, "C-SECRET")
            before = _secret_state(services, secret)
            assert len(before[0]) == 5 and before[1] == ["ben", "cy"]
            with serving(services) as base_url:
                yield ChatServer(
                    base_url=base_url, services=services, ana_key=keys.create("users/ana")[1],
                    ben_key=keys.create("users/ben@example.com")[1], general=space_of(services, "C-GENERAL"),
                    secret=secret, dm=space_of(services, "D-ANA-BEN"), group=space_of(services, "G-ABC"),
                )
            assert _secret_state(services, secret) == before, "the secret space was changed"
        finally:
            services.close()


@pytest.fixture
async def ana(server: ChatServer) -> AsyncIterator[Client]:
    async with mcp_http(server.base_url, server.ana_key, CHAT_PATH) as client:
        yield client


@pytest.fixture
async def ben(server: ChatServer) -> AsyncIterator[Client]:
    async with mcp_http(server.base_url, server.ben_key, CHAT_PATH) as client:
        yield client


# ---------------------------------------------------------------- helpers


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
        yield from (part for part in value.split("/") if len(part) > 2)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def assert_nothing_secret(text: str, request: Mapping[str, Any]) -> None:
    """No word, name or ID of the secret space in ``text``, but for what the request itself said."""
    scrubbed = text
    for said in sorted(set(_strings(request)), key=len, reverse=True):
        scrubbed = scrubbed.replace(said, "«input»")
    found = SECRET_WORDS.search(scrubbed)
    assert found is None, f"{found.group()!r} leaked in: {scrubbed[:500]}"


def _validate(tool: str, body: dict[str, Any]) -> None:
    if tool == "list_messages":
        assert_matches(MESSAGES_VALIDATOR, body)
    elif tool == "search_messages":
        for message in body.get("messages", []):
            assert_matches(CHAT_MESSAGE_VALIDATOR, message)
    elif tool == "send_message":
        assert_matches(CHAT_MESSAGE_VALIDATOR, body["message"])


async def answer(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(is an error, the one text block): an error checked for its shape, a result for its schema."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        return True, error_text(result)
    body = structured(result)
    _validate(tool, body)
    return False, json.dumps(body, sort_keys=True, ensure_ascii=False)


async def all_messages(client: Client, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Every page of search_messages for ``arguments``."""
    found: list[dict[str, Any]] = []
    token: str | None = None
    for _ in range(50):
        request = {**arguments, "pageSize": 100, **({"pageToken": token} if token else {})}
        kind, text = await answer(client, "search_messages", request)
        assert not kind, text
        assert_nothing_secret(text, request)
        body = json.loads(text)
        found.extend(body.get("messages", []))
        token = body.get("nextPageToken")
        if not token:
            return found
    raise AssertionError("paging does not end")


def spaces_of(found: list[dict[str, Any]]) -> set[str]:
    return {message["messageId"].split("/messages/")[0] for message in found}


def fill(template: Any, space: str, general: str) -> Any:
    if isinstance(template, str):
        return template.replace("{S}", space).replace("{G}", general)
    if isinstance(template, dict):
        return {key: fill(value, space, general) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, space, general) for value in template]
    return template


# ---------------------------------------------------------------- the secret space by name

NAMING_THE_SPACE: dict[str, tuple[str, dict[str, Any]]] = {
    "list_messages": ("list_messages", {"conversationId": "{S}"}),
    "list_messages-thread": ("list_messages", {"conversationId": "{S}", "threadId": "{S}/threads/s0"}),
    "list_messages-window": ("list_messages", {"conversationId": "{S}", "pageSize": 1,
                                               "startTime": "2026-03-02T08:00:00Z", "endTime": "2026-03-03T00:00:00Z"}),
    "list_messages-empty-window": ("list_messages", {"conversationId": "{S}", "startTime": "2030-01-01T00:00:00Z"}),
    "list_messages-bad-time": ("list_messages", {"conversationId": "{S}", "startTime": "yesterday"}),
    "list_messages-bad-token": ("list_messages", {"conversationId": "{S}", "pageToken": "garbage"}),
    "list_messages-negative-size": ("list_messages", {"conversationId": "{S}", "pageSize": -1}),
    "list_messages-secret-thread-in-general": ("list_messages", {"conversationId": "{G}", "threadId": "{S}/threads/s0"}),
    "search_messages-conversation": ("search_messages", {"searchParameters": {"conversationId": "{S}"}}),
    "search_messages-conversation-keywords": ("search_messages", {
        "searchParameters": {"conversationId": "{S}", "keywords": ["launch", "codes"]}}),
    "search_messages-conversation-sender": ("search_messages", {
        "searchParameters": {"conversationId": "{S}", "sender": "users/ben"}}),
    "search_messages-conversation-member": ("search_messages", {
        "searchParameters": {"conversationId": "{S}", "conversationIncludesUser": "cy@example.com"}}),
    "search_messages-conversation-name": ("search_messages", {
        "searchParameters": {"conversationId": "{S}", "spaceDisplayNames": ["secret"]}}),
    "search_messages-conversation-ordered": ("search_messages", {
        "searchParameters": {"conversationId": "{S}", "startTime": "2026-03-02T09:00:00Z"},
        "orderBy": "CREATE_TIME_ASC", "pageSize": 1}),
    "search_messages-conversation-bad-token": ("search_messages", {
        "searchParameters": {"conversationId": "{S}"}, "pageToken": "garbage"}),
    "list_memberships": ("list_memberships", {"parent": "{S}"}),
    "list_memberships-paged": ("list_memberships", {"parent": "{S}", "pageSize": 1}),
    "list_memberships-bad-token": ("list_memberships", {"parent": "{S}", "pageToken": "garbage"}),
    "send_message": ("send_message", {"conversationId": "{S}", "messageText": "hello?"}),
    "send_message-thread": ("send_message", {"conversationId": "{S}", "threadId": "{S}/threads/s0",
                                             "messageText": "hello?"}),
    "send_message-new-thread-name": ("send_message", {"conversationId": "{S}", "threadId": "{S}/threads/nope",
                                                      "messageText": "hello?"}),
    "send_message-mention": ("send_message", {"conversationId": "{S}", "messageText": "<users/cy> launch?"}),
    "send_message-blank": ("send_message", {"conversationId": "{S}", "messageText": "  "}),
    "send_message-too-long": ("send_message", {"conversationId": "{S}", "messageText": "x" * 5000}),
    "send_message-secret-thread-in-general": ("send_message", {"conversationId": "{G}", "threadId": "{S}/threads/s0",
                                                               "messageText": "hello?"}),
}
assert {tool for tool, _ in NAMING_THE_SPACE.values()} == set(CHAT_TOOLS) - {"search_conversations"}


@pytest.mark.parametrize("case", list(NAMING_THE_SPACE))
async def test_naming_the_secret_space_answers_as_a_space_that_does_not_exist(
    ana: Client, server: ChatServer, case: str
) -> None:
    tool, template = NAMING_THE_SPACE[case]
    secret_request = fill(template, server.secret, server.general)
    absent_request = fill(template, ABSENT, server.general)

    secret_error, secret_text = await answer(ana, tool, secret_request)
    absent_error, absent_text = await answer(ana, tool, absent_request)

    assert secret_error == absent_error
    assert secret_text.replace(server.secret, "spaces/{S}") == absent_text.replace(ABSENT, "spaces/{S}")
    assert_nothing_secret(secret_text, secret_request)


@pytest.mark.parametrize(
    "spelling",
    [str.lower, str.upper, lambda name: name + " ", lambda name: " " + name, lambda name: name + "/",
     lambda name: name.replace("spaces/", "spaces//"), lambda name: name + "/threads/s0",
     lambda name: name + "/messages/s0", lambda name: name.replace("spaces/", "SPACES/"),
     lambda name: name.removeprefix("spaces/")],
    ids=["lower", "upper", "trailing-space", "leading-space", "trailing-slash", "double-slash", "a-thread",
         "a-message", "upper-collection", "bare-id"],
)
@pytest.mark.parametrize("tool", ["list_messages", "list_memberships", "send_message", "search_messages"])
async def test_other_spellings_of_the_secret_space_answer_as_those_of_a_missing_one(
    ana: Client, server: ChatServer, tool: str, spelling: Any
) -> None:
    def request(name: str) -> dict[str, Any]:
        requests: dict[str, dict[str, Any]] = {
            "list_messages": {"conversationId": name}, "list_memberships": {"parent": name},
            "send_message": {"conversationId": name, "messageText": "hello?"},
            "search_messages": {"searchParameters": {"conversationId": name}}}
        return requests[tool]

    def normalise(text: str, name: str) -> str:
        return text.replace(spelling(name), "{S}").replace(name.removeprefix("spaces/"), "{ID}")

    secret_request, absent_request = request(spelling(server.secret)), request(spelling(ABSENT))
    secret_answer = await answer(ana, tool, secret_request)
    absent_answer = await answer(ana, tool, absent_request)

    assert secret_answer[0] == absent_answer[0]
    assert normalise(secret_answer[1], server.secret) == normalise(absent_answer[1], ABSENT)
    assert_nothing_secret(secret_answer[1], secret_request)


async def test_every_endpoint_answers_ana_alike(server: ChatServer) -> None:
    # /mcp (every service) and /chat/mcp serve the same tools to the same key.
    cases = ["list_messages-thread", "search_messages-conversation", "list_memberships", "send_message"]
    async with mcp_http(server.base_url, server.ana_key) as everything, \
            mcp_http(server.base_url, server.ana_key, CHAT_PATH) as chat:
        for case in cases:
            tool, template = NAMING_THE_SPACE[case]
            request = fill(template, server.secret, server.general)
            assert await answer(everything, tool, request) == await answer(chat, tool, request), case
        for tool, request in [("search_messages", NOTHING_FOR_ANA["keyword"][1]),
                              ("search_conversations", {"spaceNameQuery": "secret"})]:
            assert await answer(everything, tool, request) == await answer(chat, tool, request) == (False, "{}")


async def test_the_secret_space_is_real_to_its_members(ben: Client, server: ChatServer) -> None:
    # The control: the requests above do reach the secret space for a member.
    listed = structured(await ben.call_tool("list_messages", {"conversationId": server.secret}))
    found = structured(await ben.call_tool("search_messages", {"searchParameters": {"keywords": ["launch"]}}))
    members = structured(await ben.call_tool("list_memberships", {"parent": server.secret}))
    named = structured(await ben.call_tool("search_conversations", {"spaceNameQuery": "secret"}))

    assert_matches(MESSAGES_VALIDATOR, listed)
    assert len(listed["messages"]) == 5
    assert all(SECRET_WORDS.search(m["plaintextBody"]) for m in listed["messages"])
    assert spaces_of(found["messages"]) == {server.secret}
    assert {m["member"]["name"] for m in members["memberships"]} == {"users/ben", "users/cy"}
    assert [c["conversationId"] for c in named["conversations"]] == [server.secret]


# ---------------------------------------------------------------- the secret space by its words, name and people

NOTHING_FOR_ANA: dict[str, tuple[str, dict[str, Any]]] = {
    "keyword": ("search_messages", {"searchParameters": {"keywords": ["launch"]}}),
    "keyword-upper": ("search_messages", {"searchParameters": {"keywords": ["LAUNCH"]}}),
    "keyword-digits": ("search_messages", {"searchParameters": {"keywords": ["0000"]}}),
    "keywords": ("search_messages", {"searchParameters": {"keywords": ["launch", "codes"]}}),
    "keyword-phrase": ("search_messages", {"searchParameters": {"keywords": ["launch codes 3 are 0000"]}}),
    "keyword-prefix": ("search_messages", {"searchParameters": {"keywords": ["launch*"]}}),
    "keyword-or": ("search_messages", {"searchParameters": {"keywords": ["launch OR status"]}}),
    "keyword-relevance": ("search_messages", {"searchParameters": {"keywords": ["codes"]}, "orderBy": "RELEVANCE_DESC"}),
    "keyword-oldest-first": ("search_messages", {"searchParameters": {"keywords": ["codes"]},
                                                 "orderBy": "CREATE_TIME_ASC", "pageSize": 1}),
    "space-name": ("search_messages", {"searchParameters": {"spaceDisplayNames": ["secret"]}}),
    "space-name-upper": ("search_messages", {"searchParameters": {"spaceDisplayNames": ["SECRET"]}}),
    "space-name-part": ("search_messages", {"searchParameters": {"spaceDisplayNames": ["ecre"]}}),
    "space-name-and-keyword": ("search_messages", {"searchParameters": {"spaceDisplayNames": ["secret"],
                                                                         "keywords": ["launch"]}}),
    "member-and-keyword": ("search_messages", {"searchParameters": {"conversationIncludesUser": "users/cy",
                                                                     "keywords": ["launch"]}}),
    "sender-and-keyword": ("search_messages", {"searchParameters": {"sender": "ben@example.com",
                                                                     "keywords": ["codes"]}}),
    "sender-member-keyword": ("search_messages", {"searchParameters": {
        "sender": "users/ben", "conversationIncludesUser": "cy@example.com", "keywords": ["0000"],
        "startTime": "2026-03-02T09:00:00Z", "endTime": "2026-03-02T09:05:00Z"}}),
    "member-by-email-upper": ("search_messages", {"searchParameters": {"conversationIncludesUser": "users/CY@EXAMPLE.COM",
                                                                        "keywords": ["codes"]}}),
    "mentions-me-and-keyword": ("search_messages", {"searchParameters": {"mentionsMe": True, "keywords": ["launch"]}}),
    "link-and-space-name": ("search_messages", {"searchParameters": {"hasLink": False, "spaceDisplayNames": ["secret"]}}),
    "conversation-name": ("search_conversations", {"spaceNameQuery": "secret"}),
    "conversation-name-upper": ("search_conversations", {"spaceNameQuery": " SECRET "}),
    "conversation-name-part": ("search_conversations", {"spaceNameQuery": "ecr"}),
    "conversation-with-cy": ("search_conversations", {"participants": ["users/cy"]}),
    "conversation-with-cy-by-email": ("search_conversations", {"participants": ["cy@example.com"]}),
    "conversation-named-with-ben-and-cy": ("search_conversations", {"participants": ["users/ben", "users/cy"],
                                                                     "spaceNameQuery": "secret"}),
}


@pytest.mark.parametrize("case", list(NOTHING_FOR_ANA))
async def test_searching_for_the_secret_space_finds_nothing(ana: Client, case: str) -> None:
    tool, request = NOTHING_FOR_ANA[case]

    is_error, text = await answer(ana, tool, request)

    assert not is_error, text
    assert text == "{}"  # no result, no count, and no page token to page on


@pytest.mark.parametrize(
    "parameters",
    [{}, {"conversationIncludesUser": "users/cy"}, {"conversationIncludesUser": "ben@example.com"},
     {"sender": "users/ben"}, {"sender": "users/cy", "conversationIncludesUser": "users/ben"},
     {"startTime": "2026-03-02T09:00:00Z", "endTime": "2026-03-02T09:05:00Z"}, {"spaceDisplayNames": ["e"]},
     {"keywords": ["status"]}, {"hasLink": False}],
    ids=["everything", "with-cy", "with-ben", "by-ben", "by-cy-with-ben", "when-secret-was-written", "any-name",
         "keyword", "no-link"],
)
@pytest.mark.parametrize("order", ["CREATE_TIME_DESC", "CREATE_TIME_ASC", "RELEVANCE_DESC"])
async def test_searches_that_the_secret_space_would_match_return_only_ana_s_spaces(
    ana: Client, server: ChatServer, parameters: dict[str, Any], order: str
) -> None:
    found = await all_messages(ana, {"searchParameters": parameters, "orderBy": order})

    assert found
    assert spaces_of(found) <= server.anas
    assert len({m["messageId"] for m in found}) == len(found)


async def test_ana_s_conversations_and_their_members_say_nothing_of_the_secret_space(
    ana: Client, server: ChatServer
) -> None:
    requests: list[tuple[str, dict[str, Any]]] = [
        ("search_conversations", {}), ("search_conversations", {"pageSize": 1000}),
        ("search_conversations", {"participants": ["users/ben", "users/cy"]}),
        ("search_conversations", {"participants": ["users/ben"]}),
        ("search_conversations", {"spaceNameQuery": "e"}),
        *(("list_memberships", {"parent": space}) for space in sorted(server.anas)),
        *(("list_messages", {"conversationId": space, "pageSize": 50}) for space in sorted(server.anas)),
    ]
    for tool, request in requests:
        is_error, text = await answer(ana, tool, request)
        assert not is_error, (tool, request, text)
        assert_nothing_secret(text, request)

    every = json.loads((await answer(ana, "search_conversations", {}))[1])["conversations"]
    assert {c["conversationId"] for c in every} == server.anas
    with_both = json.loads((await answer(ana, "search_conversations", {
        "participants": ["users/ben", "users/cy"]}))[1])["conversations"]
    assert [c["conversationId"] for c in with_both] == [server.group]


async def test_a_user_that_does_not_exist_matches_no_message(services: Services, http_server: str) -> None:
    # An export may lose a message's author (a Takeout message without its creator, a Slack record with
    # neither user nor bot_id): such a message has no sender, and must not be what a search "by" an
    # unknown user finds.
    ChatImporter(services.database).run(RecordsExport(PEOPLE, [ImportedConversation(
        "C-ORPHANS", "SPACE", "orphans", ("U-ANA",), iter([
            ImportedMessage("n1", 1_700_000_000_000_000, "a message whose author the export lost", "slack", None),
            ImportedMessage("n2", 1_700_000_060_000_000, "one of ana's", "slack", "U-ANA"),
        ]))]))
    key = ApiKeys(services.database).create("users/ana")[1]
    async with mcp_http(http_server, key, CHAT_PATH) as ana:
        everything = await all_messages(ana, {"searchParameters": {}})
        by_nobody = {sender: await answer(ana, "search_messages", {"searchParameters": {"sender": sender}})
                     for sender in ("users/nobody", "nobody@example.com", "users/U-ANA")}
        with_nobody = await answer(ana, "search_messages", {"searchParameters": {
            "conversationIncludesUser": "users/nobody"}})

    assert len(everything) == 2
    assert with_nobody == (False, "{}")
    assert by_nobody == {sender: (False, "{}") for sender in by_nobody}


# ---------------------------------------------------------------- page tokens


async def test_a_page_token_issued_to_a_member_is_refused_to_ana(
    ana: Client, ben: Client, server: ChatServer
) -> None:
    issued: list[tuple[str, dict[str, Any]]] = []
    requests: list[tuple[str, dict[str, Any]]] = [
        ("list_messages", {"conversationId": server.secret, "pageSize": 2}),
        ("list_messages", {"conversationId": server.general, "pageSize": 2}),
        ("search_messages", {"searchParameters": {"keywords": ["launch"]}, "pageSize": 2}),
        ("search_messages", {"searchParameters": {"conversationId": server.secret}, "pageSize": 2,
                             "orderBy": "CREATE_TIME_ASC"}),
        ("search_conversations", {"pageSize": 1}),
        ("list_memberships", {"parent": server.secret, "pageSize": 1}),
    ]
    for tool, request in requests:
        token = structured(await ben.call_tool(tool, request)).get("nextPageToken")
        assert token, (tool, request)
        issued.append((tool, {**request, "pageToken": token}))

    # ... and a token of ana's own, for a space she is in, sent with the secret space's name.
    own = structured(await ana.call_tool("list_messages", {"conversationId": server.general, "pageSize": 1}))
    issued.append(("list_messages", {"conversationId": server.secret, "pageSize": 1,
                                     "pageToken": own["nextPageToken"]}))

    garbage = error_text(await ana.call_tool("list_messages", {"conversationId": ABSENT, "pageToken": "garbage"}),
                         "INVALID_ARGUMENT")
    for tool, replayed in issued:
        is_error, text = await answer(ana, tool, replayed)
        assert is_error, (tool, text)
        assert text == garbage, (tool, text)  # the same words as for any token that is not hers
        assert_nothing_secret(text, replayed)
        # ... and the same when the space it names does not exist.
        elsewhere = fill(json.loads(json.dumps(replayed).replace(server.secret, "{S}")), ABSENT, server.general)
        assert await answer(ana, tool, elsewhere) == (True, garbage)


# ---------------------------------------------------------------- hostile input

HOSTILE_TEXT: dict[str, str] = {
    "long-5000": "a" * 5000,
    "long-100k": "b" * 100_000,
    "unicode": "sp\u00e4ces/\u00fc\u00f1\u00ee\u00e7\u00f8d\u00e9",
    "emoji": "\U0001f600\U0001f4a5",
    "rtl-override": "abc\u202edef",
    "zero-width": "a\u200bb",
    "nul": "a\x00b",
    "newline": "a\nb",
    "sql": "' OR 1=1 --",
    "sql-drop": '"; DROP TABLE chat_messages; --',
    "like-wildcards": "%_%",
    "fts5": '"a" OR b* NEAR(c d) -e ^f col:g',
    "fts5-quote": '"',
    "tsquery": "a & !b | c:* <-> d",
    "backslash": "\\",
    "percent": "%",
    "star": "*",
    "dash": "-",
    "empty": "",
    "blank": "   ",
    "spaces-percent": "spaces/%",
    "spaces-star": "spaces/*",
    "spaces-dash": "spaces/-",
    "spaces-empty": "spaces/",
    "spaces-dot-dot": "spaces/../spaces/C-GENERAL",
    "spaces-2000": "spaces/" + "a" * 2000,
    "spaces-129": "spaces/" + "a" * 129,
    "spaces-nul": "spaces/C-GENERAL\x00",
    "spaces-newline": "spaces/C-GENERAL\n",
    "spaces-unicode": "spaces/g\u00e9n\u00e9ral",
    "spaces-sql": "spaces/' OR '1'='1",
    "spaces-encoded": "spaces/C-GENERAL%2F..",
    "threads-star": "spaces/C-GENERAL/threads/*",
    "users-percent": "users/%",
    "users-star": "users/*",
    "email-sql": "x'--@example.com",
    "email-huge": "a" * 64 + "@" + "b" * 255,
    "email-like": "%@%",
    "bad-month": "2026-13-45T25:61:61Z",
    "year-99999": "99999-01-01T00:00:00Z",
    "year-1": "0001-01-01T00:00:00Z",
    "year-9999": "9999-12-31T23:59:59.999999999Z",
    "offset": "2026-03-02T09:00:00+14:00",
}
WRONG_TYPES: dict[str, Any] = {"true": True, "one": 1, "null": None, "list": ["x"], "object": {"$ne": None}}
HOSTILE_NUMBERS: dict[str, Any] = {
    "10**12": 10**12, "10**30": 10**30, "-1": -1, "-10**12": -(10**12), "fraction": 1.5, "true": True,
    "string-number": "10", "string": "abc", "null": None, "list": [5], "object": {},
}
HOSTILE_BOOLEANS: dict[str, Any] = {"yes": "yes", "string-true": "true", "two": 2, "null": None, "list": [True],
                                    "nul": "\x00", "empty": ""}

TOOLS: dict[str, tuple[dict[str, Any], list[str], list[str], list[str]]] = {
    # base request (valid), string fields, number fields, boolean fields; "a.b" is a nested field, "a[0]" a list
    "list_messages": ({"conversationId": "{G}"},
                      ["conversationId", "threadId", "pageToken", "startTime", "endTime"], ["pageSize"], []),
    "search_messages": ({"searchParameters": {}},
                        ["searchParameters.keywords[0]", "searchParameters.conversationId", "searchParameters.sender",
                         "searchParameters.startTime", "searchParameters.endTime",
                         "searchParameters.conversationIncludesUser", "searchParameters.spaceDisplayNames[0]",
                         "orderBy", "pageToken"],
                        ["pageSize"],
                        ["searchParameters.hasLink", "searchParameters.mentionsMe", "searchParameters.isUnread"]),
    "search_conversations": ({}, ["spaceNameQuery", "participants[0]", "pageToken"], ["pageSize"], []),
    "list_memberships": ({"parent": "{G}"}, ["parent", "pageToken"], ["pageSize"], []),
    "send_message": ({"conversationId": "{D}", "messageText": "hostile probe"},
                     ["conversationId", "threadId", "messageText"], [], []),
}
assert set(TOOLS) == set(CHAT_TOOLS)


def with_field(base: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    request: dict[str, Any] = json.loads(json.dumps(base))
    *parents, last = field.split(".")
    target = request
    for parent in parents:
        target = target.setdefault(parent, {})
    if last.endswith("[0]"):
        target[last[:-3]] = [value]
    else:
        target[last] = value
    return request


async def outcome(client: Client, tool: str, request: dict[str, Any]) -> str | None:
    """None when the call was answered properly (a valid result, or ``CODE: message`` that is no
    INTERNAL and leaks nothing); else what went wrong."""
    try:
        result = await client.call_tool(tool, request)
    except MCPError as error:  # a protocol-level refusal: fine, unless it is an internal error
        if error.code == types.INTERNAL_ERROR:
            return f"protocol INTERNAL_ERROR: {error.message[:200]}"
        try:
            assert_no_leak(error.message)
        except AssertionError:
            return f"protocol error leaks: {error.message[:300]}"
        return None
    text = result.content[0].text if result.content and isinstance(result.content[0], types.TextContent) else ""
    try:
        if result.is_error:
            error_text(result)
        else:
            _validate(tool, structured(result))
    except AssertionError as failure:
        return text[:300] if result.is_error else f"{str(failure).splitlines()[0][:200]} | {text[:300]}"
    return None


async def _healthy(base_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(f"{base_url}/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"


@pytest.mark.parametrize("tool", list(TOOLS))
async def test_hostile_input_in_every_field_is_answered_cleanly(ana: Client, server: ChatServer, tool: str) -> None:
    base_template, text_fields, number_fields, boolean_fields = TOOLS[tool]
    base = json.loads(json.dumps(base_template).replace("{G}", server.general).replace("{D}", server.dm))
    cases = [(field, name, value) for field in text_fields
             for name, value in {**HOSTILE_TEXT, **WRONG_TYPES}.items()]
    cases += [(field, name, value) for field in number_fields for name, value in HOSTILE_NUMBERS.items()]
    cases += [(field, name, value) for field in boolean_fields for name, value in HOSTILE_BOOLEANS.items()]
    cases.append(("(unknown field)", "extra", "x"))

    failures: list[str] = []
    for field, name, value in cases:
        request = with_field(base, field, value) if field != "(unknown field)" else {**base, "dropTable": value}
        problem = await outcome(ana, tool, request)
        if problem is not None:
            failures.append(f"{tool} {field}={name}: {problem}")

    assert failures == []
    await _healthy(server.base_url)
    # The server still serves properly, and the secret space stayed secret through all of it.
    assert structured(await ana.call_tool("list_messages", {"conversationId": server.general, "pageSize": 1}))
    assert json.loads((await answer(ana, "search_messages", {"searchParameters": {"keywords": ["launch"]}}))[1]) == {}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("list_messages", {"conversationId": "spaces/C-GENERAL\ud800"}),
        ("search_messages", {"searchParameters": {"keywords": ["status\udfff"]}}),
        ("search_conversations", {"spaceNameQuery": "gen\ud83d"}),
        ("send_message", {"conversationId": "{D}", "messageText": "tail \udc00"}),
        ("list_memberships", {"parent": "spaces/\ud800"}),
    ],
    ids=["list_messages", "search_messages", "search_conversations", "send_message", "list_memberships"],
)
async def test_lone_surrogates_are_refused_without_a_trace(
    server: ChatServer, tool: str, arguments: dict[str, Any]
) -> None:
    arguments = json.loads(json.dumps(arguments).replace("{D}", server.dm))
    body = json.dumps({"method": "tools/call", "params": {"name": tool, "arguments": arguments},
                       "jsonrpc": "2.0", "id": 1})

    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.post(f"{server.base_url}/mcp", content=body,
                                   headers={**JSON_RPC_HEADERS, "authorization": f"Bearer {server.ana_key}"})

    assert_no_leak(response.text)
    message = response.json()
    if response.status_code == 200:
        result = message["result"]
        assert result["isError"] is True and "structuredContent" not in result
        assert result["content"][0]["text"].startswith("INVALID_ARGUMENT: ")
    else:
        assert response.status_code == 400
        assert message["error"]["code"] < 0
    await _healthy(server.base_url)


# ---------------------------------------------------------------- markup injection

_MARKDOWN = MarkdownIt("commonmark").enable("strikethrough")
"""CommonMark as a client renders plaintextBody (raw HTML enabled, as the commonmark preset has it)."""
_SAFE_SCHEMES = ("http://", "https://", "mailto:")


def _inline_tokens(body: str) -> Iterator[Token]:
    for token in _MARKDOWN.parse(body):
        yield token
        yield from token.children or []


def visible_text(body: str) -> str:
    """What a reader sees of the rendered message: its text, code as written, without markup."""
    parts = []
    for token in _inline_tokens(body):
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif token.type in ("code_block", "fence"):
            parts.append(token.content)
    return "".join(parts)


def assert_renders_safely(body: str) -> None:
    """No raw HTML and no link or image to anything but http(s) and mailto, as CommonMark reads it."""
    for token in _inline_tokens(body):
        assert token.type not in ("html_inline", "html_block"), (token.type, token.content, body)
        if token.type in ("link_open", "image"):
            target = str(token.attrGet("href") or token.attrGet("src") or "")
            assert target.lower().startswith(_SAFE_SCHEMES), (target, body)
    assert "<script" not in _MARKDOWN.render(body).lower(), body


LITERAL = [
    "[click](javascript:alert(1))",
    "<script>alert(1)</script>",
    "<javascript:alert(1)|click>",
    "<JaVaScRiPt:alert(1)>",
    "<vbscript:msgbox(1)|x>",
    "<img src=x onerror=alert(1)>",
    "![x](javascript:alert(1))",
    "[a]: javascript:alert(1)\n[a]",
    "<data:text/html,<b>x</b>|x>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "javascript:alert(1)",
    "# not a heading",
    "1. not a list",
    "<!-- comment -->",
    "<a href='javascript:alert(1)'>x</a>",
]
"""Text with no Google Chat markup in it (Markdown and HTML are not Chat markup): shown as typed."""


@pytest.mark.parametrize("typed", LITERAL)
async def test_markdown_and_html_in_a_sent_message_come_back_as_literal_text(
    ana: Client, server: ChatServer, typed: str
) -> None:
    sent = structured(await ana.call_tool("send_message", {"conversationId": server.group, "messageText": typed}))
    listed = structured(await ana.call_tool("list_messages", {"conversationId": server.group, "pageSize": 1}))

    body = sent["message"]["plaintextBody"]
    assert_matches(CHAT_MESSAGE_VALIDATOR, sent["message"])
    assert listed["messages"][0] == sent["message"]
    assert_renders_safely(body)
    assert visible_text(body) == typed, body


@pytest.mark.parametrize(
    ("typed", "html"),
    [
        ("**fake bold**", "<p>*<strong>fake bold</strong>*</p>\n"),
        ("*real bold* <https://ok.example|[y](javascript:alert(1))>",
         '<p><strong>real bold</strong> <a href="https://ok.example">[y](javascript:alert(1))</a></p>\n'),
        ("<https://ok.example/a)(javascript:alert(1)|z>",
         '<p><a href="https://ok.example/a)(javascript:alert(1)">z</a></p>\n'),
        ("<mailto:ana@example.com|mail <script>>", None),
        ("<https://ok.example|*b* <script>>", None),
        ("> <script>alert(1)</script>\n* [x](javascript:alert(1))", None),
        ("```\n</code><script>alert(1)</script>\n```", None),
        ("`<script>`", "<p><code>&lt;script&gt;</code></p>\n"),
        ("_<img src=x onerror=alert(1)>_", None),
    ],
    ids=["double-stars", "link-label-with-markdown", "link-with-parentheses", "mailto-label-with-html",
         "link-label-with-style-and-html", "quote-and-bullet", "code-block", "code-span", "italic-html"],
)
async def test_chat_markup_around_hostile_text_renders_only_safe_markup(
    ana: Client, server: ChatServer, typed: str, html: str | None
) -> None:
    sent = structured(await ana.call_tool("send_message", {"conversationId": server.group, "messageText": typed}))

    body = sent["message"]["plaintextBody"]
    assert_renders_safely(body)
    if html is not None:
        assert _MARKDOWN.render(body) == html, body


async def test_the_server_still_answers_after_everything(ana: Client, server: ChatServer) -> None:
    await _healthy(server.base_url)
    listed = structured(await ana.call_tool("list_messages", {"conversationId": server.general}))
    assert_matches(MESSAGES_VALIDATOR, listed)
    assert error_text(await ana.call_tool("list_messages", {"conversationId": server.secret}), "NOT_FOUND")
