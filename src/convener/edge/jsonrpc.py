"""The JSON-RPC envelope, checked before the MCP SDK sees a request.

The SDK (stateless) answers most malformed bodies itself, but not all as it should: it reads a request whose
``id`` is an object, an array, a boolean, a fraction or null as a notification and answers 202 with no body; it
answers a GET with an event stream that never ends (nothing is ever sent on it: the server keeps no session); a
body over its size limit gets a plain-text 413. ``JsonRpcGuard`` answers each of those with a JSON-RPC error
object and an HTTP 4xx, and hands every other request on with its body replayed as read: to the SDK answering
with one JSON body, or, for a tool call that asks for progress, to the one answering with an event stream
(``streaming``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convener.api.errors import Code
from convener.edge.streaming import wants_stream
from convener.edge.tools_list import ToolsListCache
from convener.edge.wire import Envelope, RequestId, send_error, valid_request_id
from convener.outside.limits import (
    JSONRPC_BODY_BYTES,
    JSONRPC_DEPTH,
    JSONRPC_METHOD_CHARS,
    JSONRPC_PROGRESS_TOKEN_CHARS,
)
from convener.toolsets import EVERYTHING, Selection, ToolsetError

ALLOWED_METHODS = b"POST"


@dataclass(frozen=True)
class Rejection:
    """Why a body is not a JSON-RPC message this server takes, as the error to answer with (HTTP 400)."""

    rpc_code: int
    message: str
    request_id: RequestId | None = None


class BodyTooLarge(Exception):
    pass


async def read_body(receive: Receive, limit: int, first: Iterable[bytes] = ()) -> bytes:
    """The request body (after the ``first`` chunks already read), refused as soon as it passes ``limit``."""
    chunks = list(first)
    size = sum(len(chunk) for chunk in chunks)
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: what came is all there is
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _too_deep(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def check(body: bytes, max_depth: int = JSONRPC_DEPTH) -> Rejection | Envelope:
    """The envelope of ``body`` when it is one JSON-RPC request, notification or response that MCP allows."""
    try:
        message = json.loads(body)
    except RecursionError:
        return Rejection(INVALID_REQUEST, f"the body nests arrays and objects deeper than {max_depth} levels")
    except ValueError as error:  # not JSON, or not UTF-8
        where = f" at line {error.lineno} column {error.colno}" if isinstance(error, json.JSONDecodeError) else ""
        return Rejection(PARSE_ERROR, f"the body is not JSON{where}")
    if isinstance(message, list):
        return Rejection(INVALID_REQUEST, "JSON-RPC batches are not supported (MCP has none since 2025-06-18); "
                                          "send one message per request")
    if not isinstance(message, dict):
        return Rejection(INVALID_REQUEST, "the body must be a JSON-RPC message: a JSON object")
    if _too_deep(message, max_depth):
        return Rejection(INVALID_REQUEST, f"the body nests arrays and objects deeper than {max_depth} levels")
    request_id = valid_request_id(message.get("id"))
    if "id" in message and request_id is None:
        return Rejection(INVALID_REQUEST, "id must be a string or an integer (at most 2^53 in size); it is "
                                          f"{_kind(message['id'])}")
    if message.get("jsonrpc") != "2.0":
        return Rejection(INVALID_REQUEST, 'jsonrpc must be "2.0"', request_id)
    if "method" not in message:
        if request_id is not None and ("result" in message) != ("error" in message):
            return Envelope(None, request_id, {})  # a response (the server sends no requests; answering is no error)
        return Rejection(INVALID_REQUEST, "method is required", request_id)
    method = message["method"]
    if not isinstance(method, str) or not method:
        return Rejection(INVALID_REQUEST, "method must be a non-empty string", request_id)
    if len(method) > JSONRPC_METHOD_CHARS:
        return Rejection(INVALID_REQUEST, f"method is longer than {JSONRPC_METHOD_CHARS} characters", request_id)
    if "params" in message and not isinstance(message["params"], dict):
        return Rejection(INVALID_PARAMS, f"params must be an object; it is {_kind(message['params'])}", request_id)
    params = message.get("params") or {}
    meta = params.get("_meta")
    progress_token = None
    if request_id is not None and isinstance(meta, dict) and "progressToken" in meta:
        # Every progress notification repeats the token, so it is bounded here; and of a type the SDK reads as
        # one: it quietly sent no progress for a boolean, and a bare "Invalid request parameters" for an object.
        progress_token = valid_request_id(meta["progressToken"])
        if progress_token is None:
            return Rejection(INVALID_PARAMS, "params._meta.progressToken must be a string or an integer (at most "
                                             f"2^53 in size); it is {_kind(meta['progressToken'])}", request_id)
        if isinstance(progress_token, str) and len(progress_token) > JSONRPC_PROGRESS_TOKEN_CHARS:
            return Rejection(INVALID_PARAMS, "params._meta.progressToken is longer than "
                                             f"{JSONRPC_PROGRESS_TOKEN_CHARS} characters", request_id)
    return Envelope(method, request_id, params, progress_token)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", float: "a fraction", int: "too large an integer"}.get(
        type(value), "not a string")


def request_id_in(body: bytes) -> RequestId | None:
    """The id of the request in ``body``, when it is one and its id is valid (for an error about it)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return valid_request_id(message.get("id")) if isinstance(message, dict) else None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands ``body`` out once, as one message, then waits on the client as before."""
    pending = [body]

    async def replayed() -> Message:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await receive()

    return replayed


def chosen_tools(scope: Scope, default: Selection) -> Selection:
    """The tools a request's connection chose with ``?toolsets=…&read_only=…`` (``default`` narrowed by them)."""
    text = scope.get("query_string", b"").decode("latin-1")[:1000]
    query = dict(parse_qsl(text, keep_blank_values=True))
    return default.narrowed_by(query)


class JsonRpcGuard:
    """Wraps one MCP endpoint: only POSTs of one well-formed JSON-RPC message of bounded size and depth pass.
    It also reads which tools the connection chose (``selection`` is the endpoint's own choice) and leaves
    that on the request for the tools to see."""

    def __init__(self, app: ASGIApp, *, streaming: ASGIApp | None = None, tools_list: ToolsListCache | None = None,
                 max_body: int = JSONRPC_BODY_BYTES, max_depth: int = JSONRPC_DEPTH,
                 selection: Selection = EVERYTHING) -> None:
        self.app = app
        self.streaming = streaming
        """Answers the tool calls that ask for progress as an event stream (``streaming.wants_stream``)."""
        self.tools_list = tools_list
        self.max_body = max_body
        self.max_depth = max_depth
        self.selection = selection

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: a GET stream would carry nothing and never end (a call's progress travels on the stream
            # answering its own POST), and there is no session for a DELETE to end.
            await send_error(send, 405, INVALID_REQUEST, Code.UNIMPLEMENTED,
                             f"{scope['method'][:16]} is not served here: this server keeps no sessions and answers "
                             "each POSTed JSON-RPC request in its response; POST requests",
                             headers=((b"allow", ALLOWED_METHODS),))
            return
        try:
            selection = chosen_tools(scope, self.selection)
        except ToolsetError as error:
            await send_error(send, 400, INVALID_PARAMS, Code.INVALID_ARGUMENT, str(error))
            return
        scope.setdefault("state", {})["selection"] = selection
        declared = dict(scope["headers"]).get(b"content-length", b"")
        try:
            if declared.isdigit() and int(declared) > self.max_body:
                raise BodyTooLarge
            body = await read_body(receive, self.max_body)
        except BodyTooLarge:
            await send_error(send, 413, INVALID_REQUEST, Code.RESOURCE_EXHAUSTED,
                             f"the request body is larger than {self.max_body} bytes")
            return
        checked = check(body, self.max_depth)
        if isinstance(checked, Rejection):
            await send_error(send, 400, checked.rpc_code, Code.INVALID_ARGUMENT, checked.message, checked.request_id)
            return
        if self.streaming is not None and wants_stream(scope, checked):
            await self.streaming(scope, _replay(body, receive), send)
            return
        if self.tools_list is not None and checked.method == "tools/list":
            await self.tools_list.serve(scope, _replay(body, receive), send, checked, self.app, selection)
            return
        await self.app(scope, _replay(body, receive), send)
