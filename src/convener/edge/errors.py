"""The last net at the HTTP edge: whatever escapes the layers below answers as a JSON-RPC error object.

Tools map their own failures (``tooling``); this catches what fails before or around them: looking up the
caller's key, the SDK's transport, a bug. A store error is ``UNAVAILABLE`` (HTTP 503, retry), an ``ApiError``
keeps its code, anything else is ``INTERNAL`` (HTTP 500) without its text; the request's id is echoed when
the body holds a valid one. Never a plain-text 500, never a traceback.
"""

from __future__ import annotations

import logging
import sqlite3

from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from sqlalchemy.exc import DBAPIError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convener.api.errors import INTERNAL_MESSAGE, ApiError, Code
from convener.edge.jsonrpc import BodyTooLarge, read_body, request_id_in
from convener.edge.wire import RequestId, send_error
from convener.outside.limits import JSONRPC_BODY_BYTES

logger = logging.getLogger(__name__)

HTTP_STATUS = {
    Code.CANCELLED: 499, Code.INVALID_ARGUMENT: 400, Code.DEADLINE_EXCEEDED: 504, Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409, Code.PERMISSION_DENIED: 403, Code.RESOURCE_EXHAUSTED: 429,
    Code.FAILED_PRECONDITION: 400, Code.ABORTED: 409, Code.UNIMPLEMENTED: 501, Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503, Code.UNAUTHENTICATED: 401,
}
"""google.rpc code → HTTP status, as Google's HTTP mapping has it."""

STORE_UNAVAILABLE = "the store is busy or unreachable; retry later"
RETRY_AFTER_SECONDS = b"1"


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside task-group exception groups (anyio wraps what fails in a child task)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def classify(error: Exception) -> tuple[Code, str]:
    """The google.rpc code and the message a caller may see for ``error``."""
    leaves = _leaves(error)
    for leaf in leaves:
        if isinstance(leaf, ApiError):
            return leaf.code, leaf.message
    if any(isinstance(leaf, DBAPIError | sqlite3.OperationalError) for leaf in leaves):
        return Code.UNAVAILABLE, STORE_UNAVAILABLE
    return Code.INTERNAL, INTERNAL_MESSAGE


class _Tap:
    """Keeps what the app below reads of the body, so that an error answered after it can name the request."""

    def __init__(self, receive: Receive, limit: int) -> None:
        self._receive = receive
        self._limit = limit
        self._chunks: list[bytes] = []
        self._size = 0
        self._complete = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request" and not self._complete:
            chunk = message.get("body", b"")
            self._size += len(chunk)
            if self._size <= self._limit:
                self._chunks.append(chunk)
            self._complete = not message.get("more_body", False)
        return message

    async def request_id(self) -> RequestId | None:
        """The request's id, reading the rest of the body if the failure came before it was read."""
        if self._size > self._limit:
            return None
        try:
            body = b"".join(self._chunks) if self._complete else await read_body(self._receive, self._limit, self._chunks)
        except BodyTooLarge:
            return None
        return request_id_in(body)


class EdgeErrors:
    """The outermost layer of the app: a failure below that has not started its response answers here."""

    def __init__(self, app: ASGIApp, *, max_body: int = JSONRPC_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tap = _Tap(receive, self.max_body)
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, tap.receive, watched)
        except Exception as error:  # noqa: BLE001 - the boundary: every failure leaves as one shape
            if started:
                logger.exception("%s %s failed after its response started", scope["method"], scope["path"])
                raise  # the server ends the connection: the caller sees a cut response, not a wrong one
            code, message = classify(error)
            if code is Code.INTERNAL:
                logger.exception("%s %s failed", scope["method"], scope["path"])
            else:
                logger.warning("%s %s: %s", scope["method"], scope["path"], message, exc_info=True)
            headers = ((b"retry-after", RETRY_AFTER_SECONDS),) if code is Code.UNAVAILABLE else ()
            rpc_code = INVALID_REQUEST if HTTP_STATUS[code] < 500 else INTERNAL_ERROR
            await send_error(watched, HTTP_STATUS[code], rpc_code, code, message, await tap.request_id(), headers)
