"""A scripted OpenAI-compatible server for tests: real HTTP, OpenAI's exact chat.completions shapes.

Tests drive the real ``openai`` SDK (or anything else speaking chat.completions) against it, so retries,
timeouts and JSON shapes are exercised for real rather than mocked. Use the ``fake_openai`` fixture::

    def test_something(fake_openai: FakeOpenAI) -> None:
        fake_openai.reply(text="hello")
        fake_openai.reply(tool_calls=[("lookup", {"city": "Paris"})])
        fake_openai.fail(status=429, times=2)          # then retried by the SDK
        fake_openai.delay(1.0)                         # the next request waits 1 s before its answer
        fake_openai.responder = lambda body: Reply(text=body["messages"][-1]["content"])
        ...
        assert fake_openai.requests[0]["messages"][0]["content"] == "hi"

Queued replies are used first, in order; when none is queued the ``responder`` (if any) computes one from
the request body; otherwise the request is answered with HTTP 500 and ``x-should-retry: false`` so the test
fails at once and loudly. Other test packages get the fixtures by importing both into their conftest.py::

    from tests.llm.fake_openai import fake_openai, fake_openai_server  # noqa: F401  (pytest fixtures)

or, outside pytest's fixtures, run their own: ``with FakeOpenAI().running() as fake: ...``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.conftest import serving_asgi

ToolCallSpec = tuple[str, "dict[str, Any] | str"]
"""A tool call the fake model makes: (name, arguments). A str is sent as the raw arguments text, so tests
can send malformed JSON; a dict is JSON-encoded."""

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion (status 200) or an OpenAI-style error (any other status)."""

    text: str | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    """(prompt_tokens, completion_tokens); by default a rough count of characters / 4."""
    status: int = 200
    error: str | None = None
    """The error message of a failure; a default naming the status otherwise."""
    retry_after: float | None = None
    """Seconds sent as ``retry-after-ms`` on a failure, which the SDK honours instead of its own backoff."""


Responder = Callable[[dict[str, Any]], "Reply | str"]


class FakeOpenAI:
    """The scripted server. Start it with :meth:`running` (the fixture does); ``base_url`` ends in ``/v1``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        """The JSON bodies received by /v1/chat/completions, in order (failed attempts included)."""
        self.headers: list[dict[str, str]] = []
        """The request headers, parallel to ``requests``."""
        self.responder: Responder | None = None
        self.base_url = ""
        self._queue: deque[Reply] = deque()
        self._delays: deque[float] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._generation = 0
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    # ------------------------------------------------------------------ scripting

    def reply(
        self,
        text: str | None = None,
        tool_calls: Sequence[ToolCallSpec] = (),
        *,
        finish_reason: str | None = None,
        usage: tuple[int, int] | None = None,
    ) -> None:
        """Queue a completion with ``text`` and/or ``tool_calls``."""
        self.enqueue(Reply(text=text, tool_calls=tuple(tool_calls), finish_reason=finish_reason, usage=usage))

    def fail(
        self,
        status: int = 500,
        times: int = 1,
        *,
        message: str | None = None,
        retry_after: float | None = 0.01,
    ) -> None:
        """Queue ``times`` error answers with ``status``; ``retry_after`` keeps the SDK's backoff short."""
        for _ in range(times):
            self.enqueue(Reply(status=status, error=message, retry_after=retry_after))

    def delay(self, seconds: float) -> None:
        """Make the next request wait ``seconds`` before it is answered (one delay per call, in order)."""
        with self._lock:
            self._delays.append(seconds)

    def enqueue(self, reply: Reply) -> None:
        with self._lock:
            self._queue.append(reply)

    def reset(self) -> None:
        """Forget the script, the responder and the requests seen; cut short any delayed answer."""
        with self._lock:
            self._queue.clear()
            self._delays.clear()
            self.requests.clear()
            self.headers.clear()
            self.responder = None
            self._generation += 1

    @property
    def pending(self) -> int:
        """Replies queued and not yet used."""
        with self._lock:
            return len(self._queue)

    @property
    def last_request(self) -> dict[str, Any]:
        assert self.requests, "the fake received no request"
        return self.requests[-1]

    # ------------------------------------------------------------------ serving

    @contextmanager
    def running(self) -> Iterator[FakeOpenAI]:
        """Serve on a free loopback port until exit."""
        self._stopping.clear()
        with serving_asgi(self.app) as url:
            self.base_url = f"{url}/v1"
            try:
                yield self
            finally:
                self._stopping.set()  # lets delayed handlers end, so uvicorn can stop promptly

    async def _chat(self, request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "fake_openai: the request body is not JSON", retry=False)
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            number = len(self.requests)
            reply = self._queue.popleft() if self._queue else None
            wait = self._delays.popleft() if self._delays else 0.0
            generation = self._generation
        if wait:
            deadline = time.monotonic() + wait
            while (
                time.monotonic() < deadline and not self._stopping.is_set() and generation == self._generation
            ):
                await asyncio.sleep(0.01)
        if reply is None and self.responder is not None:
            try:
                computed = self.responder(body)
            except Exception as error:  # noqa: BLE001  (reported to the test through the client's error)
                return _error(500, f"fake_openai: the responder raised {error!r}", retry=False)
            reply = Reply(text=computed) if isinstance(computed, str) else computed
        if reply is None:
            return _error(
                500, f"fake_openai: no reply queued for request #{number} and no responder set", retry=False
            )
        if reply.status != 200:
            return _error(reply.status, reply.error, retry_after=reply.retry_after)
        return JSONResponse(completion_body(body, reply, number))


def completion_body(request: dict[str, Any], reply: Reply, number: int = 1) -> dict[str, Any]:
    """A chat.completion object as OpenAI returns it, answering ``request`` with ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{index}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for index, (name, arguments) in enumerate(reply.tool_calls)
        ]
    if reply.usage is not None:
        prompt_tokens, completion_tokens = reply.usage
    else:
        prompt_tokens = max(1, len(json.dumps(request.get("messages", []))) // 4)
        completion_tokens = max(
            1, (len(reply.text or "") + len(json.dumps(message.get("tool_calls", [])))) // 4
        )
    return {
        "id": f"chatcmpl-fake{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake-model"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error(
    status: int, message: str | None, *, retry_after: float | None = None, retry: bool | None = None
) -> JSONResponse:
    kind, code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["retry-after-ms"] = str(max(1, round(retry_after * 1000)))
    if retry is not None:
        headers["x-should-retry"] = "true" if retry else "false"
    body = {
        "error": {
            "message": message or f"fake_openai: scripted HTTP {status}",
            "type": kind,
            "param": None,
            "code": code,
        }
    }
    return JSONResponse(body, status_code=status, headers=headers)


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """One server for the session: starting and stopping uvicorn per test would cost ~0.2 s each."""
    with FakeOpenAI().running() as fake:
        yield fake


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The running :class:`FakeOpenAI`, reset for this test; point a client at ``fake_openai.base_url``."""
    fake_openai_server.reset()
    yield fake_openai_server
    fake_openai_server.reset()
