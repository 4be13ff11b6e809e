"""Progress over Streamable HTTP: a tool call that carries a progressToken, from a client that accepts an
event stream, is answered with one: its progress notifications, then its result as the last event. Every other
request is answered with plain JSON as before. The server is real (uvicorn on loopback), the client the MCP SDK's
own or raw HTTP in the shape of a curl call; the tool is ingest_documents over a small folder, which reports a
step per file."""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from convener.auth.keys import ApiKeys
from convener.config import Settings
from convener.outside.limits import JSONRPC_PROGRESS_TOKEN_CHARS
from convener.services import Services
from tests.conftest import BACKENDS, private_database, serving
from tests.e2e.conftest import mcp_http, structured
from tests.knowledge.conftest import CORPUS, write_corpus

FILES = len(CORPUS)
"""The files an ingest of the corpus indexes, one progress step each (the image beside them is skipped)."""
BOTH = "application/json, text/event-stream"
LOCATION = "projects/knowledge/locations/global"


@dataclass(frozen=True)
class Server:
    base_url: str
    key: str
    roots: Path
    services: Services


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("progress")
    with private_database(request.param, directory) as url:
        settings = Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False,
                            knowledge_roots=(directory / "roots",), knowledge_embeddings="off")
        services = Services.open(settings)
        try:
            _, key = ApiKeys(services.database).create("users/alice")
            with serving(services) as base_url:
                yield Server(base_url, key, directory / "roots", services)
        finally:
            services.close()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    headers = {"authorization": f"Bearer {server.key}", "content-type": "application/json"}
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as client:
        yield client


@dataclass(frozen=True)
class Corpus:
    """A folder of its own, ingested under a base URL of its own, so each test's ingest adds every file."""

    path: Path
    base_url: str

    def arguments(self) -> dict[str, Any]:
        return {"path": str(self.path), "baseUrl": self.base_url}


@pytest.fixture
def corpus(server: Server) -> Corpus:
    name = uuid.uuid4().hex[:12]
    return Corpus(write_corpus(server.roots / name), f"https://{name}.example/")


NO_TOKEN = object()


def ingest_call(corpus: Corpus, request_id: int | str = 1, token: Any = NO_TOKEN) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "ingest_documents", "arguments": corpus.arguments()}
    if token is not NO_TOKEN:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def events(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an event stream, in order; every event is a ``message`` with one data line."""
    found: list[dict[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        assert set(fields) == {"event", "data"} and fields["event"] == "message", block
        found.append(json.loads(fields["data"]))
    return found


def ingested(result: dict[str, Any]) -> dict[str, Any]:
    """The finished ingest operation's summary, from a tools/call result."""
    assert "error" not in result, result
    assert result["result"].get("isError") is not True, result["result"]["content"]
    operation = result["result"]["structuredContent"]
    assert operation["done"] is True and "error" not in operation, operation
    return dict(operation["response"])


def assert_forward(values: list[float]) -> None:
    assert values, "no progress notification arrived"
    assert all(a < b for a, b in itertools.pairwise(values)), f"progress must only go forward: {values}"


def answers_plain_json(http: httpx.Client) -> None:
    """The server still answers an ordinary request, as JSON."""
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                                       "params": {"name": "list_data_sources", "arguments": {}}},
                         headers={"accept": BOTH})
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["id"] == "after" and body["result"].get("isError") is not True, body
    # An empty list is {} in proto3 JSON: on a worker where no ingest has run yet there is no data source.
    assert set(body["result"]["structuredContent"]) <= {"dataSources", "nextPageToken"}, body


# ---------------------------------------------------------------- the SDK's own client


@pytest.mark.anyio
async def test_the_sdk_client_gets_progress_notifications_then_the_result(
        server: Server, corpus: Corpus) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_http(server.base_url, server.key) as client:
        result = await client.call_tool("ingest_documents", corpus.arguments(), progress_callback=on_progress)

    operation = structured(result)
    assert operation["done"] is True and operation["response"]["added"] == FILES
    assert_forward([progress for progress, _, _ in seen])
    assert seen[-1][0] == FILES, "the last step is never the one dropped"
    assert seen[-1][2] == f"{FILES} files read, {FILES} indexed, 0 unchanged"


@pytest.mark.anyio
async def test_the_sdk_client_without_a_progress_callback_gets_the_result_alone(
        server: Server, corpus: Corpus) -> None:
    async with mcp_http(server.base_url, server.key) as client:
        operation = structured(await client.call_tool("ingest_documents", corpus.arguments()))
    assert operation["response"]["added"] == FILES


# ---------------------------------------------------------------- the raw shape, as curl sends it


def test_a_call_with_a_progress_token_is_answered_with_an_event_stream(
        http: httpx.Client, corpus: Corpus) -> None:
    response = http.post("/mcp", json=ingest_call(corpus, "ingest-1", token="tok-1"),
                         headers={"accept": BOTH})

    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == "text/event-stream"
    *notifications, last = events(response.text)
    assert last["id"] == "ingest-1" and ingested(last)["added"] == FILES, "the result is the last event"
    assert notifications, "no progress notification before the result"
    for notification in notifications:
        assert notification["method"] == "notifications/progress" and "id" not in notification
        assert notification["params"]["progressToken"] == "tok-1"
    assert_forward([n["params"]["progress"] for n in notifications])
    assert notifications[-1]["params"]["progress"] == FILES


def test_an_integer_token_at_the_length_limit_or_text_star_also_gets_a_stream(
        http: httpx.Client, corpus: Corpus) -> None:
    longest = "t" * JSONRPC_PROGRESS_TOKEN_CHARS
    streamed = http.post("/mcp", json=ingest_call(corpus, 2, token=longest),
                         headers={"accept": "application/json;q=0.9, text/*"})
    assert streamed.headers["content-type"].split(";")[0] == "text/event-stream"
    assert {n["params"]["progressToken"] for n in events(streamed.text)[:-1]} == {longest}

    numbered = http.post("/mcp", json=ingest_call(corpus, 3, token=7), headers={"accept": BOTH})
    *notifications, last = events(numbered.text)
    assert last["id"] == 3 and {n["params"]["progressToken"] for n in notifications} == {7}


def test_the_same_call_without_a_progress_token_is_answered_with_plain_json(
        http: httpx.Client, corpus: Corpus) -> None:
    response = http.post("/mcp", json=ingest_call(corpus, 4), headers={"accept": BOTH})

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "result"} and body["id"] == 4
    assert ingested(body)["added"] == FILES


@pytest.mark.parametrize("accept", ["application/json", "*/*"])
def test_a_progress_token_from_a_client_that_does_not_name_event_streams_gets_plain_json(
        http: httpx.Client, corpus: Corpus, accept: str) -> None:
    # Only JSON accepted: the streaming answer would be a 406, so the call is answered, without notifications.
    # */* (curl's default): a client that does not name event streams is not sent one.
    response = http.post("/mcp", json=ingest_call(corpus, 5, token="tok-5"), headers={"accept": accept})

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert ingested(response.json())["added"] == FILES


def test_other_methods_with_a_progress_token_stay_plain_json(http: httpx.Client) -> None:
    listing = {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": {"progressToken": "tok-6"}}}
    response = http.post("/mcp", json=listing, headers={"accept": BOTH})
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["tools"]


# ---------------------------------------------------------------- hostile


@pytest.mark.parametrize(("token", "kind"), [
    ({"a": 1}, "an object"), ([1], "an array"), (True, "a boolean"), (None, "null"), (1.5, "a fraction"),
    (2**60, "too large an integer"), ("x" * (JSONRPC_PROGRESS_TOKEN_CHARS + 1), "longer"),
    ("x" * 5_000_000, "longer"),
], ids=["object", "array", "boolean", "null", "fraction", "huge integer", "one too long", "5 MB"])
def test_a_progress_token_of_the_wrong_type_or_size_is_refused_and_the_server_stays_up(
        http: httpx.Client, corpus: Corpus, token: Any, kind: str) -> None:
    response = http.post("/mcp", json=ingest_call(corpus, "hostile", token=token), headers={"accept": BOTH})

    assert response.status_code == 400 and response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["id"] == "hostile" and body["error"]["code"] == -32602
    message = body["error"]["message"]
    assert message.startswith("INVALID_ARGUMENT: params._meta.progressToken "), message
    assert kind in message and len(message) < 200
    answers_plain_json(http)


@contextmanager
def held_at_second_document(services: Services) -> Iterator[threading.Event]:
    """The ingest stops before writing its second document until the event is set: by then one file is in and
    its progress notification sent, and the test decides when the work goes on."""
    release = threading.Event()
    writes = itertools.count(1)

    def hold(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not release.is_set() and statement.lstrip().upper().startswith("INSERT INTO KNOWLEDGE_DOCUMENTS") \
                and next(writes) == 2:
            release.wait(timeout=60)

    # Left listening, inert once released: removing a listener while another thread's statement runs the
    # listeners fails that statement (SQLAlchemy iterates them unlocked).
    event.listen(services.database.engine, "before_cursor_execute", hold)
    try:
        yield release
    finally:
        release.set()


def test_a_client_that_hangs_up_after_the_first_event_fails_neither_the_work_nor_the_server(
        server: Server, http: httpx.Client, corpus: Corpus) -> None:
    with held_at_second_document(server.services) as release:
        with http.stream("POST", "/mcp", json=ingest_call(corpus, "gone", token="tok-gone"),
                         headers={"accept": BOTH}) as response:
            assert response.headers["content-type"].split(";")[0] == "text/event-stream"
            first = next(line for line in response.iter_lines() if line.startswith("data: "))
        # Leaving the block closes the connection with the ingest still held mid-way.
        notification = json.loads(first.removeprefix("data: "))
        assert notification["method"] == "notifications/progress" and notification["params"]["progress"] == 1
        answers_plain_json(http)
        release.set()

    # The work was not cancelled with the stream: its operation ends done, every file indexed.
    listed = http.post("/mcp", headers={"accept": BOTH}, json={
        "jsonrpc": "2.0", "id": "list", "method": "tools/call",
        "params": {"name": "list_operations", "arguments": {"name": LOCATION}}}).json()
    mine = [o["name"] for o in listed["result"]["structuredContent"]["operations"]
            if o["metadata"]["baseUrl"] == corpus.base_url]
    assert len(mine) == 1
    done = http.post("/mcp", headers={"accept": BOTH}, json={
        "jsonrpc": "2.0", "id": "wait", "method": "tools/call",
        "params": {"name": "wait_operation", "arguments": {"name": mine[0], "timeout": "30s"}}}).json()
    operation = done["result"]["structuredContent"]
    assert operation["done"] is True and "error" not in operation, operation
    assert operation["response"]["added"] == FILES
    answers_plain_json(http)
