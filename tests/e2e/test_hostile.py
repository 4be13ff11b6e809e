"""Hostile input to every ces tool over real HTTP: each is refused as ``CODE: message``, leaks nothing,
and leaves the server answering and the data as it was."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from convener.auth.caller import LOCAL_USER
from convener.ces.requests import ListAppsRequest, ListConversationsRequest
from convener.services import Services
from tests.e2e.conftest import (
    APP,
    BACKENDS,
    OTHER_APP,
    SharedServer,
    assert_no_leak,
    call_json,
    error_text,
    list_all,
    sample_conversations,
    seed,
    shared_server,
)

LOCATION = "projects/acme/locations/global"
CONVERSATION = f"{APP}/conversations/c000"
STALE_ETAG = "0123456789abcdef"
JSON_RPC_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

HOSTILE_NAMES = {
    "dot-dot": "projects/../..",
    "dot-dot-app": "projects/acme/locations/global/apps/..",
    "trailing-slash": f"{APP}/",
    "leading-slash": f"/{APP}",
    "double-slash": "projects/acme//locations/global/apps/support",
    "empty": "",
    "blank": "   ",
    "unicode": "projects/acme/locations/global/apps/süppört",
    "emoji": "projects/acme/locations/global/apps/\U0001f600",
    "rtl-override": "projects/acme/locations/global/apps/sup\u202eport",
    "nul": "projects/acme/locations/global/apps/sup\x00port",
    "newline": "projects/acme/locations/global/apps/support\n",
    "5000-chars": "projects/acme/locations/global/apps/" + "a" * 5000,
    "sql": "projects/acme/locations/global/apps/' OR 1=1 --",
    "sql-quoted": "projects/acme/locations/global/apps/support' OR '1'='1",
    "percent": "projects/acme/locations/global/apps/%",
    "wildcard": "projects/*/locations/*/apps/*",
    "underscore-start": "projects/acme/locations/global/apps/_",
    "url-encoded": "projects/acme/locations/global/apps/support%2F..%2F",
    "wrong-collection": "projects/acme/locations/global/agents/support",
    "too-deep": f"{APP}/conversations/c000/extra",
}

HOSTILE_CONVERSATION_IDS = {
    "dot-dot": "../c000",
    "sql": "' OR 1=1 --",
    "trailing-slash": "c000/",
    "unicode": "çönv",
    "5000-chars": "c" * 5000,
    "percent": "%",
    "star": "*",
    "empty": "",
    "129-chars": "c" * 129,
}

HOSTILE_FILTERS = {
    "injection-in-enum": "source = \"LIVE' OR '1'='1\"",
    "injection-after-value": "turnCount > 1; DROP TABLE ces_conversations",
    "tautology-as-field": "turnCount = 1 OR 1 = 1",
    "comment": "turnCount > 1 -- AND source = EVAL",
    "unknown-field": "secret = 1",
    "body-column": 'body:"LIVE"',
    "column-name": "turn_count > 1",
    "type-mismatch-int": 'turnCount = "abc"',
    "type-mismatch-timestamp": "startTime > 5",
    "bad-calendar-date": 'startTime > "2025-02-30T00:00:00Z"',
    "int64-overflow": "turnCount > 99999999999999999999",
    "enum-unknown": "source = PRODUCTION",
    "ordered-enum": "source > LIVE",
    "ordered-repeated": "inputTypes < INPUT_TYPE_TEXT",
    "unterminated-string": 'languageCode = "en',
    "dangling-operator": "turnCount >",
    "lone-and": "AND",
    "unbalanced-open": "(turnCount > 1",
    "unbalanced-close": "turnCount > 1)",
    "control-character": 'languageCode = "en\x01"',
    "nul-character": "turnCount > 1\x00",
    "fullwidth": "ｔｕｒｎＣｏｕｎｔ > 1",
    "deep-parens-10000": "(" * 10_000 + "turnCount > 1" + ")" * 10_000,
    "deep-parens-2000": "(" * 2_000 + "turnCount > 1" + ")" * 2_000,
    "deep-not": "NOT " * 1_000 + "turnCount > 1",
    "deep-minus": "-" * 4_000 + "turnCount > 1",
    "many-comparisons": "turnCount=1 " * 300,
    "one-megabyte": "turnCount > 1 AND " * 58_255 + "turnCount > 1",
    "one-megabyte-word": "x" * 1_000_000,
}


def _cases() -> list[Any]:
    cases: list[Any] = []

    def add(case_id: str, tool: str, arguments: dict[str, Any], code: str | None = None) -> None:
        cases.append(pytest.param(tool, arguments, code, id=f"{tool}-{case_id}"))

    # list_conversations
    for key, name in HOSTILE_NAMES.items():
        add(f"parent-{key}", "list_conversations", {"parent": name})
    for key, text in HOSTILE_FILTERS.items():
        add(f"filter-{key}", "list_conversations", {"parent": APP, "filter": text}, "INVALID_ARGUMENT")
    for key, value in {"abc": "abc", "float": 1.5, "list": [10], "object": {"n": 1}, "negative": -1}.items():
        add(f"pageSize-{key}", "list_conversations", {"parent": APP, "pageSize": value}, "INVALID_ARGUMENT")
    for key, value in {"int": 42, "list": [APP], "object": {"name": APP}, "null": None}.items():
        add(f"parent-{key}", "list_conversations", {"parent": value}, "INVALID_ARGUMENT")
    add("missing-parent", "list_conversations", {"pageSize": 5}, "INVALID_ARGUMENT")
    add("filter-int", "list_conversations", {"parent": APP, "filter": 42}, "INVALID_ARGUMENT")
    add("pageToken-int", "list_conversations", {"parent": APP, "pageToken": 42}, "INVALID_ARGUMENT")
    add("source-unknown", "list_conversations", {"parent": APP, "source": "PRODUCTION"}, "INVALID_ARGUMENT")
    add("source-int", "list_conversations", {"parent": APP, "source": 1}, "INVALID_ARGUMENT")
    add("source-lower", "list_conversations", {"parent": APP, "source": "live"}, "INVALID_ARGUMENT")
    add("sources-string", "list_conversations", {"parent": APP, "sources": "EVAL"}, "INVALID_ARGUMENT")
    add("sources-unknown", "list_conversations", {"parent": APP, "sources": ["EVAL", "NOPE"]}, "INVALID_ARGUMENT")
    add("sources-nested", "list_conversations", {"parent": APP, "sources": [["EVAL"]]}, "INVALID_ARGUMENT")
    add("extra-field", "list_conversations", {"parent": APP, "orderBy": "name"}, "INVALID_ARGUMENT")

    # get_conversation and delete_conversation
    for tool in ("get_conversation", "delete_conversation"):
        for key, name in HOSTILE_NAMES.items():
            add(f"name-{key}", tool, {"name": name})
        for key, conversation_id in HOSTILE_CONVERSATION_IDS.items():
            add(f"id-{key}", tool, {"name": f"{APP}/conversations/{conversation_id}"})
        add("name-int", tool, {"name": 42}, "INVALID_ARGUMENT")
        add("name-list", tool, {"name": [CONVERSATION]}, "INVALID_ARGUMENT")
        add("missing-name", tool, {}, "INVALID_ARGUMENT")
        add("extra-field", tool, {"name": CONVERSATION, "force": True}, "INVALID_ARGUMENT")
        add("other-app", tool, {"name": f"{OTHER_APP}/conversations/c000-not-there"}, "NOT_FOUND")
        add("missing-app", tool, {"name": "projects/acme/locations/global/apps/ghost/conversations/c000"}, "NOT_FOUND")
    add("source-unknown", "get_conversation", {"name": CONVERSATION, "source": "ALL"}, "INVALID_ARGUMENT")

    # create_app
    for key, name in HOSTILE_NAMES.items():
        add(f"parent-{key}", "create_app", {"parent": name, "appId": "fresh", "app": {}})
    for key, app_id in {"dot-dot": "..", "slash": "a/b", "sql": "' OR 1=1 --", "unicode": "äpp", "129-chars": "a" * 129,
                        "leading-dash": "-app", "space": "my app", "existing": "support"}.items():
        add(f"appId-{key}", "create_app", {"parent": LOCATION, "appId": app_id, "app": {}})
    add("missing-app", "create_app", {"parent": LOCATION, "appId": "fresh"}, "INVALID_ARGUMENT")
    add("missing-parent", "create_app", {"appId": "fresh", "app": {}}, "INVALID_ARGUMENT")
    add("app-string", "create_app", {"parent": LOCATION, "appId": "fresh", "app": "support"}, "INVALID_ARGUMENT")
    add("app-list", "create_app", {"parent": LOCATION, "appId": "fresh", "app": [{}]}, "INVALID_ARGUMENT")
    add("displayName-int", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"displayName": 5}}, "INVALID_ARGUMENT")
    add("displayName-1mb", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"displayName": "x" * 2**20}},
        "INVALID_ARGUMENT")
    add("description-too-long", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"description": "x" * 20_000}},
        "INVALID_ARGUMENT")
    add("app-unknown-field", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"owner": "mallory"}},
        "INVALID_ARGUMENT")
    add("bad-createTime", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"createTime": "yesterday"}},
        "INVALID_ARGUMENT")
    add("extra-field", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {}, "validateOnly": True},
        "INVALID_ARGUMENT")
    add("displayName-nul", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"displayName": "a\x00b"}},
        "INVALID_ARGUMENT")
    add("description-nul", "create_app", {"parent": LOCATION, "appId": "fresh", "app": {"description": "\x00"}},
        "INVALID_ARGUMENT")
    add("appId-int", "create_app", {"parent": LOCATION, "appId": 7, "app": {}}, "INVALID_ARGUMENT")

    # get_app, delete_app
    for tool in ("get_app", "delete_app"):
        for key, name in HOSTILE_NAMES.items():
            add(f"name-{key}", tool, {"name": name})
        add("name-int", tool, {"name": 42}, "INVALID_ARGUMENT")
        add("missing-name", tool, {}, "INVALID_ARGUMENT")
        add("extra-field", tool, {"name": APP, "force": True}, "INVALID_ARGUMENT")
        add("a-location", tool, {"name": LOCATION}, "INVALID_ARGUMENT")
        add("missing", tool, {"name": "projects/acme/locations/global/apps/ghost"}, "NOT_FOUND")
    add("stale-etag", "delete_app", {"name": APP, "etag": STALE_ETAG}, "ABORTED")
    add("etag-int", "delete_app", {"name": APP, "etag": 5}, "INVALID_ARGUMENT")

    # list_apps
    for key, name in HOSTILE_NAMES.items():
        add(f"parent-{key}", "list_apps", {"parent": name})
    add("parent-an-app", "list_apps", {"parent": APP}, "INVALID_ARGUMENT")
    add("pageSize-abc", "list_apps", {"parent": LOCATION, "pageSize": "abc"}, "INVALID_ARGUMENT")
    add("pageSize-negative", "list_apps", {"parent": LOCATION, "pageSize": -1}, "INVALID_ARGUMENT")
    add("pageToken-garbage", "list_apps", {"parent": LOCATION, "pageToken": "garbage"}, "INVALID_ARGUMENT")
    add("filter-unknown-field", "list_apps", {"parent": LOCATION, "filter": "etag = x"}, "INVALID_ARGUMENT")
    add("filter-injection", "list_apps", {"parent": LOCATION, "filter": "displayName = x' OR '1'='1"}, "INVALID_ARGUMENT")
    add("filter-deep", "list_apps", {"parent": LOCATION, "filter": "(" * 10_000 + 'displayName = "x"' + ")" * 10_000},
        "INVALID_ARGUMENT")
    add("missing-parent", "list_apps", {}, "INVALID_ARGUMENT")
    add("extra-field", "list_apps", {"parent": LOCATION, "showDeleted": True}, "INVALID_ARGUMENT")

    # update_app
    for key, name in HOSTILE_NAMES.items():
        add(f"name-{key}", "update_app", {"app": {"name": name, "displayName": "pwned"}})
    add("missing-app", "update_app", {"updateMask": "displayName"}, "INVALID_ARGUMENT")
    add("missing-name", "update_app", {"app": {"displayName": "pwned"}}, "INVALID_ARGUMENT")
    add("stale-etag", "update_app", {"app": {"name": APP, "displayName": "pwned", "etag": STALE_ETAG}}, "ABORTED")
    for key, mask in {"name": "name", "etag": "etag", "createTime": "createTime", "unknown": "owner",
                      "one-bad": "displayName,owner", "star-and-name": "*,name"}.items():
        add(f"mask-{key}", "update_app", {"app": {"name": APP, "displayName": "pwned"}, "updateMask": mask}, "INVALID_ARGUMENT")
    add("mask-int", "update_app", {"app": {"name": APP}, "updateMask": 5}, "INVALID_ARGUMENT")
    add("mask-list", "update_app", {"app": {"name": APP}, "updateMask": ["displayName"]}, "INVALID_ARGUMENT")
    add("displayName-too-long", "update_app", {"app": {"name": APP, "displayName": "x" * 513}}, "INVALID_ARGUMENT")
    add("app-unknown-field", "update_app", {"app": {"name": APP, "owner": "mallory"}}, "INVALID_ARGUMENT")
    add("description-nul", "update_app", {"app": {"name": APP, "description": "x\x00"}}, "INVALID_ARGUMENT")
    add("missing", "update_app", {"app": {"name": "projects/acme/locations/global/apps/ghost", "displayName": "x"}},
        "NOT_FOUND")
    add("extra-field", "update_app", {"app": {"name": APP}, "allowMissing": True}, "INVALID_ARGUMENT")
    return cases


FEW = 6


def _seed_few(services: Services) -> None:
    seed(services, APP, sample_conversations(APP, FEW))
    seed(services, OTHER_APP, sample_conversations(OTHER_APP, 3))


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    """One server per backend for the whole module: hostile calls must not change anything anyway."""
    with shared_server(request.param, tmp_path_factory.mktemp("hostile"), _seed_few) as shared:
        yield shared


@pytest.fixture
def http_server(server: SharedServer) -> str:
    return server.base_url


@pytest.fixture
def api_key(server: SharedServer) -> str:
    return server.alice_key


def snapshot(services: Services) -> dict[str, Any]:
    """What a hostile call must leave alone: every conversation and every app, read in-process."""
    apps = services.apps.list(ListAppsRequest(parent=LOCATION, page_size=1000), LOCAL_USER)
    taken: dict[str, Any] = {"apps": apps.to_json()}
    for app in (APP, OTHER_APP):
        page = services.conversations.list(ListConversationsRequest(parent=app, page_size=100), LOCAL_USER)
        assert page.next_page_token is None
        taken[app] = page.to_json()["conversations"]
    return taken


@pytest.fixture
async def before(server: SharedServer, alice: Client) -> AsyncIterator[dict[str, Any]]:
    """The data before the test; after it, the data must be the same and the server must still answer."""
    taken = snapshot(server.services)
    assert len(taken[APP]) == FEW
    yield taken
    assert snapshot(server.services) == taken
    assert len((await call_json(alice, "list_apps", {"parent": LOCATION}))["apps"]) == 2


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "arguments", "code"), _cases())
async def test_hostile_arguments_are_refused_cleanly(
    alice: Client, before: dict[str, Any], tool: str, arguments: dict[str, Any], code: str | None
) -> None:
    result = await alice.call_tool(tool, arguments)

    text = error_text(result, code)
    assert len(text) < 2_000, "an error message should not echo large input back"


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["list_conversations", "get_conversation", "delete_conversation", "create_app", "get_app",
                                  "list_apps", "update_app", "delete_app"])
async def test_calling_without_arguments_is_invalid(alice: Client, before: dict[str, Any], tool: str) -> None:
    error_text(await alice.call_tool(tool, None), "INVALID_ARGUMENT")


@pytest.mark.anyio
@pytest.mark.parametrize("filter_text", ['languageCode:"%"', 'languageCode:"_"', 'languageCode = "*%*"',
                                         'entryAgent:"\\\\"', "languageCode = \"' OR ''='\""])
async def test_like_wildcards_and_quotes_in_filter_values_are_literal(
    alice: Client, before: dict[str, Any], filter_text: str
) -> None:
    assert await list_all(alice, {"parent": APP, "filter": filter_text}) == []


def _post(base_url: str, key: str, body: str | bytes, path: str = "/mcp") -> httpx.Response:
    headers = {**JSON_RPC_HEADERS, "authorization": f"Bearer {key}"}
    return httpx.post(f"{base_url}{path}", content=body, headers=headers, timeout=60)


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["list_conversations", "get_app", "update_app"])
@pytest.mark.parametrize("arguments", ["x", [1, 2], 42, True], ids=["string", "array", "number", "boolean"])
async def test_arguments_that_are_not_an_object_are_a_protocol_error(
    http_server: str, api_key: str, before: dict[str, Any], tool: str, arguments: Any
) -> None:
    # The MCP schema makes params.arguments an object, so this is a malformed request (JSON-RPC
    # invalid params), not a tool failure: the SDK refuses it before any tool runs.
    body = {"method": "tools/call", "params": {"name": tool, "arguments": arguments}, "jsonrpc": "2.0", "id": 1}

    response = _post(http_server, api_key, json.dumps(body))

    assert_no_leak(response.text)
    message = response.json()
    assert message["error"]["code"] == -32602
    assert "result" not in message


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [
        '{"method": "tools/call", "params": {"name": "list_apps", "arguments": {"parent": ' + "[" * 100_000 + "]" * 100_000
        + '}}, "jsonrpc": "2.0", "id": 1}',
        '{"method": "tools/call", "params": {"name": "list_apps", "arguments": {"parent": "projects/acme/locations/global"',
        "\xff\xfe not json",
        '{"method": "tools/call", "params": {"name": "drop_database", "arguments": {}}, "jsonrpc": "2.0", "id": 1}',
        '{"method": "tools/call", "params": {"name": "' + "x" * 100_000 + '", "arguments": {}}, "jsonrpc": "2.0", "id": 1}',
    ],
    ids=["100k-deep-json", "truncated-json", "not-json", "unknown-tool", "100kb-tool-name"],
)
async def test_malformed_requests_get_a_protocol_error_and_no_traceback(
    http_server: str, api_key: str, before: dict[str, Any], body: str
) -> None:
    response = _post(http_server, api_key, body.encode("utf-8", "surrogateescape"))

    assert response.status_code < 500
    assert_no_leak(response.text)
    assert len(response.text) < 5_000
    assert response.json()["error"]["code"] < 0


@pytest.mark.anyio
async def test_the_server_keeps_answering_after_a_burst_of_hostile_calls(
    alice: Client, http_server: str, before: dict[str, Any]
) -> None:
    for text in HOSTILE_FILTERS.values():
        error_text(await alice.call_tool("list_conversations", {"parent": APP, "filter": text}), "INVALID_ARGUMENT")
    for name in HOSTILE_NAMES.values():
        error_text(await alice.call_tool("delete_app", {"name": name}))

    assert httpx.get(f"{http_server}/healthz", timeout=30).status_code == 200


def _tool_call(tool: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"method": "tools/call", "params": {"name": tool, "arguments": arguments}, "jsonrpc": "2.0", "id": 1})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("list_conversations", {"parent": APP, "filter": 'languageCode = "\ud800"'}),
        ("list_conversations", {"parent": APP + "\udfff"}),
        ("get_app", {"name": APP + "\ud800"}),
        ("create_app", {"parent": LOCATION, "appId": "fresh", "app": {"displayName": "\ud83d"}}),
        ("update_app", {"app": {"name": APP, "description": "tail \udc00"}}),
    ],
    ids=["filter", "parent", "name", "displayName", "description"],
)
async def test_lone_surrogates_are_refused_without_a_trace(
    http_server: str, api_key: str, before: dict[str, Any], tool: str, arguments: dict[str, Any]
) -> None:
    # json.dumps escapes a lone surrogate as \udXXX. The SDK's JSON parser refuses it as a malformed
    # request; were it to pass, the tool must refuse it as INVALID_ARGUMENT (it cannot be stored).
    response = _post(http_server, api_key, _tool_call(tool, arguments))

    assert_no_leak(response.text)
    message = response.json()
    if response.status_code == 200:
        result = message["result"]
        assert result["isError"] is True and "structuredContent" not in result
        assert result["content"][0]["text"].startswith("INVALID_ARGUMENT: ")
    else:
        assert response.status_code == 400
        assert message["error"]["code"] < 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example"}, 421),
        ({"host": "127.0.0.1.evil.example:80"}, 421),
        ({"origin": "http://evil.example"}, 403),
        ({"content-type": "text/plain"}, 400),
        ({"accept": "text/html"}, 406),
    ],
    ids=["foreign-host", "lookalike-host", "foreign-origin", "wrong-content-type", "html-only"],
)
async def test_requests_a_browser_could_be_tricked_into_are_refused_even_with_a_key(
    http_server: str, api_key: str, before: dict[str, Any], headers: dict[str, str], status: int
) -> None:
    response = httpx.post(
        f"{http_server}/mcp",
        content=_tool_call("delete_app", {"name": APP}),
        headers={**JSON_RPC_HEADERS, "authorization": f"Bearer {api_key}", **headers},
        timeout=60,
    )

    assert response.status_code == status
    assert_no_leak(response.text)


@pytest.mark.anyio
async def test_a_body_over_sixteen_megabytes_is_refused(http_server: str, api_key: str, before: dict[str, Any]) -> None:
    body = _tool_call("list_conversations", {"parent": APP, "filter": "x" * (17 * 2**20)})

    response = _post(http_server, api_key, body)

    assert response.status_code == 413
    assert_no_leak(response.text)


@pytest.mark.anyio
async def test_a_json_rpc_batch_is_refused(http_server: str, api_key: str, before: dict[str, Any]) -> None:
    response = _post(http_server, api_key, "[" + _tool_call("delete_app", {"name": APP}) + "]")

    assert response.status_code == 400
    assert response.json()["error"]["code"] < 0
    assert_no_leak(response.text)
