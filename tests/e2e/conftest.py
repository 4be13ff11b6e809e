"""Helpers for the end-to-end tests: seeded data, MCP clients with a key, and the seed's JSON Schema.

Responses are checked against ``tests/schemas``, written by hand from Google's reference (seed 000)
and independent of Convener's pydantic models.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from referencing import Registry, Resource
from sqlalchemy import event, text

from convener.auth.keys import ApiKeys
from convener.ces.importing import import_conversations
from convener.ces.names import AppName
from convener.config import Settings
from convener.services import Services
from tests.conftest import BACKENDS, private_database, serving

SCHEMAS = Path(__file__).parent.parent / "schemas"
APP = "projects/acme/locations/global/apps/support"
OTHER_APP = "projects/acme/locations/global/apps/sales"
BIG_APP = "projects/acme/locations/global/apps/archive"
BIG = 105
SOURCES = ("LIVE", "SIMULATOR", "EVAL", "AGENT_TOOL")
SEEDED = 57
ERROR = re.compile(
    r"^(INVALID_ARGUMENT|NOT_FOUND|PERMISSION_DENIED|ALREADY_EXISTS|ABORTED|FAILED_PRECONDITION|DEADLINE_EXCEEDED"
    r"|UNAVAILABLE|RESOURCE_EXHAUSTED|UNIMPLEMENTED): \S"
)
LEAKS = ("Traceback", "sqlalchemy", "psycopg", "Error executing tool", "sqlite3", 'File "')
BASE_TIME = datetime(2025, 3, 1, 8, 0, 0, tzinfo=UTC)


# ---------------------------------------------------------------- the seed's JSON Schema


def _load(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return schema


_CONVERSATION_SCHEMA = _load("conversation.schema.json")
_LIST_SCHEMA = _load("list_conversations_response.schema.json")
_EVALUATION_SCHEMA = _load("evaluation.schema.json")
_MESSAGES_SCHEMA = _load("list_messages_response.schema.json")
_REGISTRY: Registry = Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema))
    for schema in (_CONVERSATION_SCHEMA, _LIST_SCHEMA, _EVALUATION_SCHEMA, _MESSAGES_SCHEMA)
)
CONVERSATION_VALIDATOR = jsonschema.Draft202012Validator(_CONVERSATION_SCHEMA, registry=_REGISTRY)
LIST_VALIDATOR = jsonschema.Draft202012Validator(_LIST_SCHEMA, registry=_REGISTRY)
EVALUATION_VALIDATOR = jsonschema.Draft202012Validator(_EVALUATION_SCHEMA, registry=_REGISTRY)
EVALUATION_RESULT_VALIDATOR = jsonschema.Draft202012Validator(
    {"$ref": f"{_EVALUATION_SCHEMA['$id']}#/$defs/EvaluationResult"}, registry=_REGISTRY)
MESSAGES_VALIDATOR = jsonschema.Draft202012Validator(_MESSAGES_SCHEMA, registry=_REGISTRY)
"""list_messages' response as seed 002 gives it (send_message and search_messages carry the same ChatMessage)."""
CHAT_MESSAGE_VALIDATOR = jsonschema.Draft202012Validator(
    {"$ref": f"{_MESSAGES_SCHEMA['$id']}#/$defs/ChatMessage"}, registry=_REGISTRY)
for _schema in (_CONVERSATION_SCHEMA, _LIST_SCHEMA, _EVALUATION_SCHEMA, _MESSAGES_SCHEMA):
    jsonschema.Draft202012Validator.check_schema(_schema)


def assert_matches(validator: jsonschema.Draft202012Validator, document: Any) -> None:
    problems = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not problems, "\n".join(f"{list(p.absolute_path)}: {p.message}" for p in problems[:10])


# ---------------------------------------------------------------- result shapes


def structured(result: types.CallToolResult) -> dict[str, Any]:
    """A successful result: structured content, and one text block holding the same JSON."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    return dict(result.structured_content)


def listed(result: types.CallToolResult) -> dict[str, Any]:
    """A list_conversations page, checked against the seed's ListConversationsResponse."""
    page = structured(result)
    assert_matches(LIST_VALIDATOR, page)
    return page


def conversation(result: types.CallToolResult) -> dict[str, Any]:
    """A get_conversation result, checked against the seed's Conversation."""
    body = structured(result)
    assert_matches(CONVERSATION_VALIDATOR, body)
    return body


def error_text(result: types.CallToolResult, code: str | None = None) -> str:
    """A failed call: ``isError``, one ``CODE: message`` text block, nothing structured, nothing leaked."""
    assert result.is_error, result.structured_content
    assert result.structured_content is None
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    text = result.content[0].text
    assert ERROR.match(text), text[:500]
    if code is not None:
        assert text.startswith(f"{code}: "), text[:500]
    assert_no_leak(text)
    return text


def assert_no_leak(text: str) -> None:
    """No Python exception, SQL driver or SDK wrapper text reaches a client."""
    for leak in LEAKS:
        assert leak not in text, text[:500]


# ---------------------------------------------------------------- data


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def timestamp_nanos(text: str) -> int:
    """Nanoseconds since the epoch of a ``...Z`` timestamp, so that differently rounded forms compare right."""
    match = re.fullmatch(r"(.{19})(?:\.(\d{1,9}))?Z", text)
    assert match, text
    seconds = datetime.fromisoformat(match[1] + "+00:00").timestamp()
    return int(seconds) * 1_000_000_000 + int((match[2] or "").ljust(9, "0"))


def newest_first(conversations: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names in list order: startTime descending, then name descending."""
    ordered = sorted(conversations, key=lambda c: (timestamp_nanos(c["startTime"]), c["name"]), reverse=True)
    return [c["name"] for c in ordered]


def _user_chunk(kind: int, index: int) -> dict[str, Any]:
    chunks: list[dict[str, Any]] = [
        {"text": f"I need help with order {index}"},
        {"transcript": f"spoken request {index}"},
        {"image": {"mimeType": "image/png", "data": "iVBORw0KGgo=", "altText": "a receipt"}},
        {"blob": {"mimeType": "application/pdf", "data": "JVBERi0xLjQ="}},
        {"payload": {"event": "welcome", "attempt": index}},
        {"toolResponse": {"id": f"call-{index}", "tool": f"{APP}/tools/lookup", "response": {"output": {"ok": True}}}},
        {"updatedVariables": {"customer_tier": "gold", "count": index}},
    ]
    return chunks[kind % len(chunks)]


def _turn(app: str, index: int, turn: int, start: datetime) -> dict[str, Any]:
    begin = start + timedelta(seconds=30 * turn)
    agent_chunks: list[dict[str, Any]] = [
        {"text": "Let me look that up."},
        {
            "toolCall": {
                "id": f"call-{index}-{turn}",
                "args": {"order": index, "tags": [], "nested": {"deep": [1, "two", None]}},
                "toolsetTool": {"toolset": f"{app}/toolsets/crm", "toolId": "find_order"},
            }
        },
        {"agentTransfer": {"targetAgent": f"{app}/agents/billing"}},
        {"defaultVariables": {"locale": "en-US"}},
    ]
    return {
        "messages": [
            {"role": "user", "chunks": [_user_chunk(index + turn, index)], "eventTime": rfc3339(begin)},
            {"role": "agent", "chunks": agent_chunks, "eventTime": rfc3339(begin + timedelta(seconds=2))},
        ],
        "rootSpan": {
            "name": "turn",
            "startTime": rfc3339(begin),
            "endTime": rfc3339(begin + timedelta(seconds=2, milliseconds=500)),
            "attributes": {"turn": turn},
            "childSpans": [
                {
                    "name": "llm",
                    "startTime": rfc3339(begin + timedelta(milliseconds=100)),
                    "endTime": rfc3339(begin + timedelta(seconds=1, microseconds=250)),
                    "childSpans": [
                        {"name": "tool", "startTime": rfc3339(begin + timedelta(milliseconds=200)),
                         "endTime": rfc3339(begin + timedelta(milliseconds=700))},
                    ],
                }
            ],
        },
        "userIntendedText": f"help with order {index}",
    }


def start_time_of(index: int) -> datetime:
    """Start times repeat across conversations (ties), in an order unrelated to the IDs."""
    bucket = (index * 7) % 23
    return BASE_TIME + timedelta(hours=bucket, microseconds=(0, 500_000, 123_456)[bucket % 3])


def sample_conversation(app: str, index: int) -> dict[str, Any]:
    """One varied conversation: source, turn count, input types and times all depend on ``index``."""
    start = start_time_of(index)
    turns = 1 + index % 5
    body: dict[str, Any] = {
        "name": f"{app}/conversations/c{(index * 37) % 101:03d}",
        "turns": [_turn(app, index, turn, start) for turn in range(turns)],
        "entryAgent": f"{app}/agents/root",
        "languageCode": ("en-US", "it-IT", "de")[index % 3],
    }
    if index % 11 != 0:  # the rest default to LIVE
        body["source"] = SOURCES[index % len(SOURCES)]
    if index % 10 != 9:  # the rest take their times from the messages and spans
        body["startTime"] = rfc3339(start)
        body["endTime"] = rfc3339(start + timedelta(seconds=30 * turns))
    return body


def sample_conversations(app: str = APP, count: int = SEEDED) -> list[dict[str, Any]]:
    return [sample_conversation(app, index) for index in range(count)]


def seed(services: Services, app: str, conversations: Iterable[Mapping[str, Any]]) -> None:
    """Import conversations as JSON Lines, the way users load them."""
    lines = [json.dumps(body) for body in conversations]
    report = import_conversations(services.apps, services.conversations, lines, AppName.parse(app))
    assert not report.errors, report.errors
    assert report.created == len(lines)


@pytest.fixture
def seeded(services: Services) -> list[dict[str, Any]]:
    """57 varied conversations in APP and three in OTHER_APP; returns what was imported into APP."""
    bodies = sample_conversations()
    seed(services, APP, bodies)
    seed(services, OTHER_APP, sample_conversations(OTHER_APP, 3))
    return bodies


@pytest.fixture
def bob_key(services: Services) -> str:
    """A key for users/bob with every scope."""
    _, secret = ApiKeys(services.database).create("users/bob")
    return secret


# ---------------------------------------------------------------- a server shared by a module

@dataclass(frozen=True)
class SharedServer:
    base_url: str
    alice_key: str
    bob_key: str
    services: Services


@contextmanager
def shared_server(backend: str, directory: Path, setup: Callable[[Services], None]) -> Iterator[SharedServer]:
    """A store prepared by ``setup`` and served over HTTP, for a whole module of read-mostly tests."""
    with private_database(backend, directory) as url:
        services = Services.open(Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False))
        try:
            setup(services)
            _, alice_key = ApiKeys(services.database).create("users/alice")
            _, bob_key = ApiKeys(services.database).create("users/bob")
            with serving(services) as base_url:
                yield SharedServer(base_url, alice_key, bob_key, services)
        finally:
            services.close()


def seed_catalog(services: Services) -> None:
    """The standard read-only data: APP (57 varied), OTHER_APP (3) and BIG_APP (105, more than a maximum page)."""
    seed(services, APP, sample_conversations())
    seed(services, OTHER_APP, sample_conversations(OTHER_APP, 3))
    seed(services, BIG_APP, sample_conversations(BIG_APP, 101) + [
        {"name": f"{BIG_APP}/conversations/extra-{index}", "startTime": "2020-01-01T00:00:00Z"} for index in range(4)
    ])


def _count(services: Services, app: str) -> int:
    with services.database.transaction() as connection:
        return int(connection.execute(text(
            "SELECT count(*) FROM ces_conversations c JOIN ces_apps a ON a.id = c.app_pk WHERE a.name = :app"
        ), {"app": app}).scalar_one())


@pytest.fixture(scope="module", params=BACKENDS)
def catalog(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """One seeded server per backend for a module's read-only tests; checked unchanged at the end."""
    with shared_server(request.param, tmp_path_factory.mktemp("catalog"), seed_catalog) as shared:
        yield shared
        counts = {app: _count(shared.services, app) for app in (APP, OTHER_APP, BIG_APP)}
        assert counts == {APP: SEEDED, OTHER_APP: 3, BIG_APP: BIG}, "a read-only test changed the catalog"


@pytest.fixture
async def reader(catalog: SharedServer) -> AsyncIterator[Client]:
    """An MCP client over real HTTP to the shared catalog, as users/alice."""
    async with mcp_http(catalog.base_url, catalog.alice_key) as client:
        yield client


@pytest.fixture
async def bob_reader(catalog: SharedServer) -> AsyncIterator[Client]:
    """An MCP client over real HTTP to the shared catalog, as users/bob."""
    async with mcp_http(catalog.base_url, catalog.bob_key) as client:
        yield client


# ---------------------------------------------------------------- clients


@asynccontextmanager
async def mcp_http(base_url: str, key: str | None, path: str = "/mcp") -> AsyncIterator[Client]:
    """The official MCP client over Streamable HTTP, presenting ``key`` as a bearer token."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(f"{base_url}{path}", http_client=http)) as client:
            yield client


@pytest.fixture
async def alice(http_server: str, api_key: str) -> AsyncIterator[Client]:
    """An MCP client over real HTTP, as users/alice."""
    async with mcp_http(http_server, api_key) as client:
        yield client


async def list_pages(client: Client, arguments: Mapping[str, Any], page_size: int = 10) -> list[dict[str, Any]]:
    """Every page of list_conversations for ``arguments``, each checked against the schema."""
    pages: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        request = {**arguments, "pageSize": page_size}
        if token:
            request["pageToken"] = token
        page = listed(await client.call_tool("list_conversations", request))
        pages.append(page)
        assert len(page.get("conversations", [])) <= page_size
        token = page.get("nextPageToken")
        if token is None:
            return pages
        assert page.get("conversations"), "a page with a nextPageToken must not be empty"
        assert len(pages) <= 200, "paging does not end"


async def list_all(client: Client, arguments: Mapping[str, Any], page_size: int = 10) -> list[dict[str, Any]]:
    """Every conversation for ``arguments``, in list order, checked to appear once."""
    found = [c for page in await list_pages(client, arguments, page_size) for c in page.get("conversations", [])]
    names = [c["name"] for c in found]
    assert len(names) == len(set(names)), "a conversation was listed twice"
    return found


async def call_json(client: Client, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return structured(await client.call_tool(tool, dict(arguments)))


# ---------------------------------------------------------------- races made repeatable


@contextmanager
def writers_meet_before(services: Services, statement_prefix: str, parties: int = 2) -> Iterator[None]:
    """Hold every statement starting with ``statement_prefix`` until ``parties`` of them are waiting.

    Concurrent requests then interleave the same way every run: each has done its reads and checks
    before any of them writes. A server that locks what it checked makes the others wait instead;
    the barrier then gives up after a few seconds and lets the holder go on.
    """
    barrier = threading.Barrier(parties, timeout=3)
    prefix = statement_prefix.upper()

    def hold(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith(prefix):
            with suppress(threading.BrokenBarrierError):
                barrier.wait()

    event.listen(services.database.engine, "before_cursor_execute", hold)
    try:
        yield
    finally:
        event.remove(services.database.engine, "before_cursor_execute", hold)


async def outcomes_of_concurrent_calls(base_url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Run the calls at once, each on its own connection; "OK" or the error code of each, sorted."""
    outcomes: list[str] = []

    async def one(tool: str, arguments: dict[str, Any]) -> None:
        async with mcp_http(base_url, key) as client:
            result = await client.call_tool(tool, arguments)
        outcomes.append("OK" if not result.is_error else error_text(result).split(":", 1)[0])

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for tool, arguments in calls:
                group.start_soon(one, tool, arguments)
    return sorted(outcomes)
