"""An ``mcpToolset``: the tools of another MCP server, listed and called through the official MCP client.

CES's McpToolset names a Streamable HTTP server by ``serverAddress``. Convener extends it with ``command`` and
``args`` for a local server started as a subprocess and spoken to over stdio. Apps are created over MCP by
callers the operator does not vet, so starting a program or calling a URL is a security boundary: ``check_endpoint``
(run when the toolset is created or updated, and again before each use) asks the gate (``convener.outside``),
which refuses any command not listed in ``CONVENER_MCP_STDIO_COMMANDS`` and any host outside ``CONVENER_URL_HOSTS``. ``list_tools`` and ``call_tool`` trust an endpoint that passed it.

The runtime runs tools on worker threads, so these functions are synchronous: each runs the async client with
``anyio.run`` in the calling thread, inside ``anyio.fail_after(timeout)``, on a connection of its own. Tool
listings are cached per endpoint for ``TOOL_LIST_TTL`` seconds, because the runtime lists the tools at every
model step and a stdio server would otherwise be started each time.
"""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import httpx2

from convener.api.errors import InvalidArgument
from convener.ces.runtime.failures import ToolFailure
from convener.config import Settings
from convener.outside.commands import check_command
from convener.outside.urls import check_url

# The MCP SDK is imported where a toolset is called, not with this module: checking a toolset's definition
# (every app edit, every evaluation run) needs none of it, and it takes most of a second to import.
if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, ContentBlock

    from convener.ces.definitions import McpToolset

T = TypeVar("T")

TOOL_LIST_TTL = 30.0
"""Seconds a tool listing is reused; a server's tools rarely change within a conversation turn."""

MAX_LIST_PAGES = 20
"""Pages of tools/list followed; a server that paginates forever cannot hang a turn."""

MAX_MESSAGE = 1000
"""Characters of a remote error quoted in a ToolFailure."""

_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class McpEndpoint:
    """Where an MCP server is: a Streamable HTTP URL, or (a Convener extension) a command speaking stdio.

    Exactly one of ``server_address`` and ``command`` is set. ``headers`` (credentials, say) go with every
    HTTP request; ``args`` and ``env`` (merged over the SDK's minimal inherited environment) apply to a
    command.
    """

    server_address: str | None = None
    command: str | None = None
    args: tuple[str, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)

    def cache_key(self) -> tuple[Any, ...]:
        """A hashable identity: same key, same server and same credentials."""
        return (
            self.server_address,
            self.command,
            tuple(self.args),
            tuple(sorted(self.headers.items())),
            tuple(sorted(self.env.items())),
        )

    def describe(self) -> str:
        """The endpoint for messages: no query string, user info or header, which may hold secrets."""
        if self.server_address:
            parts = urllib.parse.urlsplit(self.server_address)
            host = parts.netloc.rpartition("@")[2]
            return _clip(f"{parts.scheme}://{host}{parts.path}", 120)
        return _clip(PurePath(self.command or "").name or "the command", 80)


def endpoint_of(spec: McpToolset) -> McpEndpoint:
    """The server a toolset's definition names."""
    return McpEndpoint(
        server_address=spec.server_address,
        command=spec.command,
        args=tuple(spec.args or ()),
        headers=dict(spec.custom_headers or {}),
    )


@dataclass(frozen=True)
class RemoteTool:
    """A tool the server lists; ``input_schema`` is the JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


def check_endpoint(endpoint: McpEndpoint, settings: Settings, field: str) -> None:
    """Raise ``InvalidArgument`` naming ``field`` unless ``endpoint`` is well formed, and ``PermissionDenied``
    unless the gate lets the server reach it: the URL's host (``CONVENER_URL_HOSTS``) or the command
    (``CONVENER_MCP_STDIO_COMMANDS``, see ``convener.outside.commands``)."""
    address = (endpoint.server_address or "").strip()
    command = endpoint.command or ""
    if bool(address) == bool(command.strip()):
        raise InvalidArgument(
            f"{field}: set exactly one of serverAddress (a Streamable HTTP URL) and command (a stdio server)"
        )
    if address:
        check_url(address, settings.url_hosts, f"{field}.serverAddress")
        if endpoint.args or endpoint.env:
            raise InvalidArgument(f"{field}: args and env apply only to a command, not to a serverAddress")
        for name, value in endpoint.headers.items():
            if not _HEADER_NAME.match(name):
                raise InvalidArgument(f'{field}: "{_clip(name, 60)}" is not a valid HTTP header name')
            if any(c in value for c in "\r\n\0"):
                raise InvalidArgument(f"{field}: the value of header {name} must not contain line breaks")
        return
    if endpoint.headers:
        raise InvalidArgument(f"{field}: headers apply only to a serverAddress, not to a command")
    check_command(command, endpoint.args, endpoint.env, settings.mcp_stdio_commands, field)


# ---------------------------------------------------------------- the tool list cache

_cache_lock = threading.Lock()
_cache: dict[tuple[Any, ...], tuple[float, tuple[RemoteTool, ...]]] = {}


def clear_tool_cache() -> None:
    """Forget every cached listing (after an app's toolset changes, or between tests)."""
    with _cache_lock:
        _cache.clear()


def _copies(tools: Sequence[RemoteTool]) -> list[RemoteTool]:
    """Fresh schemas, so a caller that annotates one cannot change what the cache serves next."""
    return [RemoteTool(t.name, t.description, copy.deepcopy(t.input_schema)) for t in tools]


# ---------------------------------------------------------------- calls


def list_tools(endpoint: McpEndpoint, *, timeout: float) -> list[RemoteTool]:
    """The server's tools, from a listing at most ``TOOL_LIST_TTL`` s old; ``ToolFailure`` if unreachable."""
    key = endpoint.cache_key()
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None and cached[0] > now:
            return _copies(cached[1])

    async def fetch(client: Client) -> tuple[RemoteTool, ...]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(
                RemoteTool(tool.name, tool.description or tool.title or "", dict(tool.input_schema))
                for tool in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(tools)

    listed = _run(endpoint, timeout, "listing the tools", fetch)
    with _cache_lock:
        expired = [k for k, (expiry, _) in _cache.items() if expiry <= now]
        for stale in expired:
            del _cache[stale]
        _cache[key] = (time.monotonic() + TOOL_LIST_TTL, listed)
    return _copies(listed)


def call_tool(
    endpoint: McpEndpoint, name: str, arguments: dict[str, Any], *, timeout: float
) -> dict[str, Any]:
    """``{"output": structured content}``, or ``{"output": "joined text"}`` when the tool returned none.

    A result flagged ``isError`` becomes a ``ToolFailure`` (code UNKNOWN: the error comes from another server)
    carrying the tool's own text, so the model can read it and correct its call.
    """

    async def call(client: Client) -> CallToolResult:
        return await client.call_tool(name, arguments)

    result = _run(endpoint, timeout, f"calling {name}", call)
    if result.is_error:
        text = _joined(result.content).strip() or f"{name} reported an error without a message"
        raise ToolFailure(_clip(text, MAX_MESSAGE), code="UNKNOWN")
    if result.structured_content is not None:
        return {"output": result.structured_content}
    return {"output": _joined(result.content)}


def _joined(content: Sequence[ContentBlock]) -> str:
    """The text of a result; other blocks are named, since the model cannot see them anyway."""
    from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents

    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            parts.append(block.resource.text)
        elif isinstance(block, EmbeddedResource):
            parts.append(f"[binary resource {block.resource.uri}]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource {block.uri}]")
        elif isinstance(block, (ImageContent, AudioContent)):
            parts.append(f"[{block.type} {block.mime_type}]")
    return "\n".join(parts)


@asynccontextmanager
async def _connected(endpoint: McpEndpoint, timeout: float) -> AsyncIterator[Client]:
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    if endpoint.server_address:
        http_client = httpx2.AsyncClient(headers=dict(endpoint.headers), timeout=httpx2.Timeout(timeout))
        async with http_client as http:
            transport = streamable_http_client(endpoint.server_address.strip(), http_client=http)
            async with Client(transport, read_timeout_seconds=timeout, cache=None) as client:
                yield client
    else:
        parameters = StdioServerParameters(
            command=endpoint.command or "", args=list(endpoint.args), env=dict(endpoint.env) or None
        )
        async with Client(parameters, read_timeout_seconds=timeout, cache=None) as client:
            yield client


def _run(endpoint: McpEndpoint, timeout: float, what: str, operation: Callable[[Client], Awaitable[T]]) -> T:
    """``operation`` on a fresh connection, in an event loop of this thread, within ``timeout`` seconds."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ToolFailure(
            "an MCP toolset was called from async code; the runtime must call it from a worker thread",
            code="INTERNAL",
        )

    async def main() -> T:
        with anyio.fail_after(timeout):
            async with _connected(endpoint, timeout) as client:
                return await operation(client)

    try:
        return anyio.run(main)
    except Exception as error:
        raise _failure(error, endpoint, what, timeout) from error


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which anyio's task groups raise."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _failure(error: BaseException, endpoint: McpEndpoint, what: str, timeout: float) -> ToolFailure:
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND, REQUEST_TIMEOUT

    where = endpoint.describe()
    leaves = _leaves(error)
    for leaf in leaves:
        if isinstance(leaf, ToolFailure):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, (TimeoutError, httpx2.TimeoutException)):
            return ToolFailure(
                f"{what} on MCP server {where} did not finish within {timeout:g} s", code="DEADLINE_EXCEEDED"
            )
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            code = {
                REQUEST_TIMEOUT: "DEADLINE_EXCEEDED",
                INVALID_PARAMS: "INVALID_ARGUMENT",
                METHOD_NOT_FOUND: "UNIMPLEMENTED",
                CONNECTION_CLOSED: "UNAVAILABLE",
            }.get(leaf.code, "UNKNOWN")
            message = _clip(f"{what} on MCP server {where} failed: {leaf.message}", MAX_MESSAGE)
            return ToolFailure(message, code=code)
    for leaf in leaves:
        if isinstance(leaf, httpx2.HTTPStatusError):
            status = leaf.response.status_code
            named = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
            code = named.get(status, "UNAVAILABLE")
            return ToolFailure(f"{what}: MCP server {where} answered HTTP {status}", code=code)
    for leaf in leaves:
        if isinstance(leaf, (OSError, httpx2.HTTPError)):
            detail = _clip(str(leaf) or type(leaf).__name__, 200)
            return ToolFailure(f"{what}: cannot reach MCP server {where}: {detail}", code="UNAVAILABLE")
    first = leaves[0]
    message = _clip(f"{what} on MCP server {where} failed: {type(first).__name__}: {first}", MAX_MESSAGE)
    return ToolFailure(message, code="UNAVAILABLE")
