"""The HTTP edge under attack: every malformed, oversized or unserved request to an MCP endpoint is answered at
once with a JSON-RPC error object (a google.rpc code first in its message), and every failure below the tools
— the store gone from under the key lookup, a bug — is a JSON-RPC error too, never a plain-text 500."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url
from starlette.types import Receive, Scope, Send

from convener.edge.errors import EdgeErrors
from convener.outside.limits import JSONRPC_BODY_BYTES, JSONRPC_DEPTH, JSONRPC_METHOD_CHARS
from convener.services import Services
from tests.conftest import BACKENDS, serving, serving_asgi
from tests.e2e.conftest import shared_server

LIST_TOOLS = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
LIST_APPS = {"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
             "params": {"name": "list_apps", "arguments": {"parent": "projects/acme/locations/global"}}}


@pytest.fixture(scope="module", params=BACKENDS)
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """One server for the module: the requests here change nothing."""
    with shared_server(request.param, tmp_path_factory.mktemp("edge"), lambda services: None) as server:
        headers = {"authorization": f"Bearer {server.alice_key}", "content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=server.base_url, headers=headers, timeout=10) as client:
            yield client


def rpc_error(response: httpx.Response, status: int, rpc_code: int, google_code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == rpc_code
    assert body["error"]["message"].startswith(f"{google_code}: "), body
    assert "Traceback" not in response.text
    return dict(body)


@pytest.mark.parametrize("path", ["/mcp", "/ces/mcp", "/chat/mcp"])
@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_only_post_is_served_and_a_get_does_not_open_an_endless_stream(
        client: httpx.Client, path: str, method: str) -> None:
    # The attack: GET /mcp with an event-stream Accept opened a stream that never ended.
    response = client.request(method, path, headers={"accept": "text/event-stream"}, timeout=5)
    body = rpc_error(response, 405, -32600, "UNIMPLEMENTED")
    assert response.headers["allow"] == "POST"
    assert body["id"] is None


@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], True, 1.5, None, 2**60], ids=repr)
def test_an_id_that_is_not_a_string_or_an_integer_is_an_invalid_request_with_a_body(
        client: httpx.Client, bad_id: Any) -> None:
    # The attack: {"id": {...}} was read as a notification and answered 202 with no body.
    response = client.post("/mcp", content=json.dumps({**LIST_TOOLS, "id": bad_id}))
    body = rpc_error(response, 400, -32600, "INVALID_ARGUMENT")
    assert body["id"] is None
    assert "id must be a string or an integer" in body["error"]["message"]


@pytest.mark.parametrize(("name", "message", "rpc_code", "echoed"), [
    ("batch", [LIST_TOOLS, LIST_TOOLS], -32600, None),
    ("empty batch", [], -32600, None),
    ("not an object", "tools/list", -32600, None),
    ("no method", {"jsonrpc": "2.0", "id": 7}, -32600, 7),
    ("method not text", {**LIST_TOOLS, "method": 5}, -32600, 7),
    ("empty method", {**LIST_TOOLS, "method": ""}, -32600, 7),
    ("long method", {**LIST_TOOLS, "method": "m" * (JSONRPC_METHOD_CHARS + 1)}, -32600, 7),
    ("old jsonrpc", {**LIST_TOOLS, "jsonrpc": "1.0"}, -32600, 7),
    ("params as array", {**LIST_TOOLS, "params": [1, 2]}, -32602, 7),
])
def test_a_malformed_envelope_is_refused_with_the_id_when_it_has_one(
        client: httpx.Client, name: str, message: Any, rpc_code: int, echoed: Any) -> None:
    body = rpc_error(client.post("/mcp", content=json.dumps(message)), 400, rpc_code, "INVALID_ARGUMENT")
    assert body["id"] == echoed


@pytest.mark.parametrize("content", [b"{not json", b"", b"\xff\xfe{}", b'{"jsonrpc": "2.0", "id": 1, '])
def test_a_body_that_is_not_json_is_a_parse_error(client: httpx.Client, content: bytes) -> None:
    rpc_error(client.post("/mcp", content=content), 400, -32700, "INVALID_ARGUMENT")


@pytest.mark.parametrize("depth", [JSONRPC_DEPTH, 100_000])
def test_json_nested_deeper_than_the_limit_is_refused_before_any_tool_runs(
        client: httpx.Client, depth: int) -> None:
    nested = "[" * depth + "]" * depth  # inside arguments: the body itself is one more level
    text = json.dumps(LIST_APPS).replace('"arguments": {', f'"arguments": {{"deep": {nested}, ', 1)
    body = rpc_error(client.post("/mcp", content=text), 400, -32600, "INVALID_ARGUMENT")
    assert f"deeper than {JSONRPC_DEPTH} levels" in body["error"]["message"]


def test_json_nested_within_the_limit_reaches_the_tool(client: httpx.Client) -> None:
    levels = JSONRPC_DEPTH - 5  # the body, params, arguments and "deep" make the rest
    text = json.dumps(LIST_APPS).replace('"arguments": {', f'"arguments": {{"deep": {"[" * levels + "]" * levels}, ', 1)
    response = client.post("/mcp", content=text)
    assert response.status_code == 200
    assert response.json()["id"] == "call-1" and "result" in response.json()  # the edge let it through


def test_a_body_over_the_limit_is_refused_unread_whether_declared_or_streamed(client: httpx.Client) -> None:
    padding = " " * (JSONRPC_BODY_BYTES + 1)
    declared = client.post("/mcp", content=json.dumps(LIST_TOOLS) + padding)
    rpc_error(declared, 413, -32600, "RESOURCE_EXHAUSTED")

    def chunks() -> Iterator[bytes]:  # no content-length: read until the limit is passed
        yield json.dumps(LIST_TOOLS).encode()
        for _ in range(JSONRPC_BODY_BYTES // 65536 + 2):
            yield b" " * 65536

    rpc_error(client.post("/mcp", content=chunks()), 413, -32600, "RESOURCE_EXHAUSTED")


def test_well_formed_messages_still_pass(client: httpx.Client) -> None:
    listed = client.post("/mcp", content=json.dumps(LIST_TOOLS))
    assert listed.status_code == 200 and listed.json()["id"] == 7 and listed.json()["result"]["tools"]
    called = client.post("/mcp", content=json.dumps(LIST_APPS))
    assert called.status_code == 200 and called.json()["id"] == "call-1"
    assert called.json()["result"].get("isError") is not True
    notified = client.post("/mcp", content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert notified.status_code == 202


def test_a_store_failing_under_the_key_lookup_is_an_unavailable_json_rpc_error(
        services: Services, api_key: str) -> None:
    if services.database.dialect != "sqlite":
        pytest.skip("breaks the store's file")
    # The attack's shape: the key lookup failed in the store and the caller got a plain-text 500.
    # Here the store really fails under it: the table of keys is gone.
    path = make_url(services.database.url).database
    assert path
    raw = sqlite3.connect(path)
    try:
        raw.execute("DROP TABLE api_keys")
        raw.commit()
    finally:
        raw.close()
    services.database.engine.dispose()
    with serving(services) as url:
        response = httpx.post(f"{url}/mcp", content=json.dumps(LIST_APPS), timeout=10, headers={
            "authorization": f"Bearer {api_key}", "content-type": "application/json", "accept": "application/json"})
    body = rpc_error(response, 503, -32603, "UNAVAILABLE")
    assert body["id"] == "call-1"  # read from the body although the failure came before it was read
    assert response.headers["retry-after"] == "1"
    assert "api_keys" not in response.text and "sqlite" not in response.text.lower()


def test_an_unexpected_failure_at_the_edge_is_internal_without_its_text() -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/after-reading":
            await receive()
        raise RuntimeError("secret detail /etc/passwd")

    def in_parts() -> Iterator[bytes]:  # the app reads the first part only, then fails
        text = json.dumps(LIST_TOOLS).encode()
        yield text[:10]
        yield text[10:]

    with serving_asgi(EdgeErrors(failing)) as url:
        for path in ("/before-reading", "/after-reading"):
            for content in (json.dumps(LIST_TOOLS).encode(), in_parts()):
                response = httpx.post(f"{url}{path}", content=content, timeout=10)
                body = rpc_error(response, 500, -32603, "INTERNAL")
                assert body["id"] == 7
                assert "secret" not in response.text and "RuntimeError" not in response.text


def test_tools_list_is_answered_alike_from_memory_with_each_callers_id(client: httpx.Client) -> None:
    first = client.post("/mcp", content=json.dumps({**LIST_TOOLS, "id": "first"}))
    again = client.post("/mcp", content=json.dumps({**LIST_TOOLS, "id": 8}))
    assert first.status_code == again.status_code == 200
    assert first.json()["id"] == "first" and again.json()["id"] == 8
    assert first.json()["result"] == again.json()["result"]
    names = {tool["name"] for tool in again.json()["result"]["tools"]}
    assert {"list_apps", "list_messages", "search_documents", "ask_data_insights"} <= names
    chat_only = client.post("/chat/mcp", content=json.dumps(LIST_TOOLS)).json()["result"]["tools"]
    assert "list_apps" not in {tool["name"] for tool in chat_only}  # one list per endpoint


def test_a_remembered_tools_list_still_refuses_what_the_sdk_refuses(client: httpx.Client) -> None:
    assert client.post("/mcp", content=json.dumps(LIST_TOOLS)).status_code == 200
    # DNS rebinding: a browser steered at the loopback server sends a foreign Host or Origin
    assert client.post("/mcp", content=json.dumps(LIST_TOOLS), headers={"host": "evil.example"}).status_code >= 400
    assert client.post("/mcp", content=json.dumps(LIST_TOOLS),
                       headers={"origin": "http://evil.example"}).status_code >= 400
    assert client.post("/mcp", content=json.dumps(LIST_TOOLS), headers={"accept": "text/html"}).status_code == 406
