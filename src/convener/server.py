"""Builds the ASGI app (``/mcp`` for every enabled service, ``/<service>/mcp`` for each) and the stdio server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from convener import __version__
from convener.auth.caller import LOCAL_USER, Caller
from convener.auth.http import BearerKeyMiddleware, is_loopback
from convener.auth.keys import ApiKeys
from convener.edge.errors import EdgeErrors
from convener.edge.jsonrpc import JsonRpcGuard
from convener.edge.tools_list import ToolsListCache
from convener.outside.limits import JSONRPC_BODY_BYTES
from convener.services import Services
from convener.tooling import build_mcp_server
from convener.toolsets import EVERYTHING, Selection

INSTRUCTIONS = (
    "Convener serves Google agent-platform tools on your own machine. Resource names look like "
    "projects/{project}/locations/{location}/apps/{app}; the demo workspace is projects/demo/locations/global. "
    "Chat conversations are spaces/{space}; find them with search_conversations. Documentation is searched "
    "with search_documents and answered with answer_query; documents are documents/{uri_without_scheme}. "
    "Tools are served in toolsets: authoring apps (agents) and administration (admin) are listed only when the "
    "server's URL asks for them, e.g. /mcp?toolsets=default,agents."
)


@dataclass(frozen=True)
class Endpoint:
    path: str
    server: Server[Any]
    selection: Selection
    """The tools it serves when a client chooses none."""


def endpoints(services: Services, default_caller: Caller = LOCAL_USER) -> list[Endpoint]:
    """``/mcp`` for every enabled service, serving the operator's toolsets; ``/<service>/mcp`` for each
    service, serving all of its tools (choosing the endpoint was the client's choice). ``default_caller`` is
    whom calls without an HTTP caller (in process) act as."""
    registries = services.registries()
    chosen = services.settings.selection
    found = [Endpoint("/mcp", build_mcp_server("convener", registries.values(), instructions=INSTRUCTIONS,
                                               default_caller=default_caller, selection=chosen), chosen)]
    whole = Selection(EVERYTHING.toolsets, chosen.read_only)
    for name, registry in registries.items():
        found.append(Endpoint(f"/{name}/mcp", build_mcp_server(
            f"convener-{name}", [registry], instructions=INSTRUCTIONS, default_caller=default_caller,
            selection=whole), whole))
    return found


def mcp_servers(services: Services, default_caller: Caller = LOCAL_USER) -> dict[str, Server[Any]]:
    """Path → MCP server of every endpoint."""
    return {endpoint.path: endpoint.server for endpoint in endpoints(services, default_caller)}


def _transport_security(host: str) -> TransportSecuritySettings:
    # Browsers can be steered at a loopback server by DNS rebinding; check Host and Origin there.
    if is_loopback(host):
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


@dataclass(frozen=True)
class _Managers:
    """One endpoint's two ways of answering (see ``edge.streaming``): one JSON body, or an event stream
    carrying a tool call's progress and then its result."""

    json: StreamableHTTPSessionManager
    stream: StreamableHTTPSessionManager


def _manager(server: Server[Any], security: TransportSecuritySettings, *,
             json_response: bool) -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(app=server, json_response=json_response, stateless=True,
                                        security_settings=security, max_request_body_size=JSONRPC_BODY_BYTES)


def build_app(services: Services) -> Starlette:
    security = _transport_security(services.settings.host)
    served = endpoints(services)
    managers = {
        endpoint.path: _Managers(json=_manager(endpoint.server, security, json_response=True),
                                 stream=_manager(endpoint.server, security, json_response=False))
        for endpoint in served
    }

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__, "services": list(services.settings.services)})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if services.settings.worker:  # take work queued by anyone, or left by a worker that stopped
            services.jobs.start()
        try:
            async with AsyncExitStack() as stack:
                for pair in managers.values():
                    await stack.enter_async_context(pair.json.run())
                    await stack.enter_async_context(pair.stream.run())
                yield
        finally:
            # On SIGTERM too: take no more jobs, and finish the running ones rather than leave them to be taken
            # over (each take-over counts against a result's attempts).
            await anyio.to_thread.run_sync(services.jobs.stop)

    # The guard answers what the SDK answers badly (GET streams, malformed envelopes, oversize bodies) and picks
    # the manager that answers the rest; the caller is known by then, so no one unauthenticated makes the server
    # parse a body.
    def guarded(endpoint: Endpoint) -> JsonRpcGuard:
        pair = managers[endpoint.path]
        return JsonRpcGuard(StreamableHTTPASGIApp(pair.json), streaming=StreamableHTTPASGIApp(pair.stream),
                            tools_list=ToolsListCache(security), selection=endpoint.selection)

    routes: list[BaseRoute] = [Route(endpoint.path, endpoint=guarded(endpoint)) for endpoint in served]
    routes.append(Route("/healthz", healthz))
    if services.settings.console:
        from convener.console.app import console_routes  # Jinja2 and the templates: only when served

        routes.extend(console_routes(services))
    middleware = [
        Middleware(EdgeErrors),
        Middleware(
            BearerKeyMiddleware,
            keys=ApiKeys(services.database),
            allow_anonymous=services.settings.allow_anonymous,
            public_paths=frozenset({"/healthz", "/", "/console"}),
            own_prefixes=("/console/",),  # the console signs its callers in itself
        )
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


async def serve_stdio(services: Services, caller: Caller = LOCAL_USER) -> None:
    """Serve over stdio, every call acting as ``caller`` (``convener serve --transport stdio --as users/ID``)."""
    server = mcp_servers(services, caller)["/mcp"]  # the same tools as /mcp serves, the operator's toolsets
    if services.settings.worker:
        services.jobs.start()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
