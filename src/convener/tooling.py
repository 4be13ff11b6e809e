"""The MCP surface: typed tool specs, and the one place errors become ``CODE: message`` results.

A service declares its tools in a ``ToolRegistry`` (name, title, description, request and
response models, annotations, a handler). ``build_mcp_server`` turns registries into a low-level
MCP server whose input and output schemas come from the models, whose results carry
``structuredContent`` plus the same JSON as text, and whose failures are ``isError`` results.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from convener import __version__
from convener.api.errors import INTERNAL_MESSAGE, ApiError, Code, PermissionDenied, describe_validation
from convener.api.protojson import ProtoModel, check_storable_json
from convener.auth.caller import LOCAL_USER, Caller
from convener.outside.request_sizes import check_request_size
from convener.progress import Notify, ProgressRelay

logger = logging.getLogger(__name__)

Report = Callable[[float, float | None, str | None], None]
"""``report(progress, total, message)``: an MCP progress notification, if the caller asked for them."""

@runtime_checkable
class HasAttachments(Protocol):
    """A response that also shows something to people, e.g. a chart as MCP image content."""

    def attachments(self) -> list[types.ImageContent]: ...


Req = TypeVar("Req", bound=ProtoModel)
Resp = TypeVar("Resp", bound=ProtoModel)

READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
"""The annotations Google gives its read tools (the seed tools)."""
CREATES = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
UPDATES = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
RUNS = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
"""Running agents reaches out: models, webhooks, OpenAPI and MCP servers."""
DELETES = types.ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class ToolSpec(Generic[Req, Resp]):
    name: str
    title: str
    description: str
    request: type[Req]
    response: type[Resp]
    annotations: types.ToolAnnotations
    handler: Callable[[Req, Caller], Resp]
    """Blocking domain call; run on a worker thread so the event loop keeps serving."""
    progress_handler: Callable[[Req, Caller, Report], Resp] | None = None
    """Used instead of ``handler`` when set: also gets a ``Report`` that sends MCP progress notifications."""
    scopes: tuple[str, ...] = ()
    """Google OAuth scopes of which the caller's key needs one (none: the service scope is enough)."""

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.request.input_json_schema(),
            output_schema=self.response.json_schema(),
            annotations=self.annotations.model_copy(update={"title": self.title}),
        )


@dataclass
class ToolRegistry:
    """The tools of one service."""

    service: str
    tools: dict[str, ToolSpec[Any, Any]] = field(default_factory=dict)

    def add(self, spec: ToolSpec[Any, Any]) -> None:
        if spec.name in self.tools:
            raise ValueError(f"tool {spec.name} is registered twice")
        self.tools[spec.name] = spec


def error_result(code: Code, message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{code.name}: {message}")], is_error=True)


def _map_exception(tool: str, error: BaseException) -> types.CallToolResult:
    """Every failure leaves as one shape; only ApiError text is ever shown to a caller."""
    if isinstance(error, ApiError):
        return error_result(error.code, error.message)
    if isinstance(error, ValidationError):
        return error_result(Code.INVALID_ARGUMENT, describe_validation(error))
    if isinstance(error, RecursionError):
        return error_result(Code.INVALID_ARGUMENT, "the request is nested too deeply")
    if isinstance(error, IntegrityError):
        return error_result(Code.ABORTED, "a concurrent change conflicted with this request; retry it")
    if isinstance(error, OperationalError | DBAPIError):
        logger.exception("store error in tool %s", tool)
        return error_result(Code.UNAVAILABLE, "the store is unavailable; retry later")
    logger.exception("unexpected error in tool %s", tool)
    return error_result(Code.INTERNAL, INTERNAL_MESSAGE)


def caller_of(ctx: ServerRequestContext[Any, Any], default: Caller = LOCAL_USER) -> Caller:
    """The HTTP middleware leaves the caller on the request; stdio and in-process calls are ``default``
    (the local user, or whom a stdio server was started ``--as``)."""
    request = ctx.request
    caller = getattr(getattr(request, "state", None), "caller", None) if request is not None else None
    return caller if isinstance(caller, Caller) else default


def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


async def _run_reporting(handler: Callable[[Any, Caller, Report], Any], request: Any, caller: Caller,
                         notify: Notify | None) -> Any:
    """``handler`` on a worker thread, its progress relayed to ``notify`` without the work waiting on the
    client; whatever progress is still waiting is sent before this returns, so before the result."""
    if notify is None:
        return await anyio.to_thread.run_sync(handler, request, caller, _no_progress)
    relay = ProgressRelay(notify)
    failure: Exception | None = None
    async with anyio.create_task_group() as sending:
        sending.start_soon(relay.run)
        try:
            response = await anyio.to_thread.run_sync(handler, request, caller, relay.report)
        except Exception as error:  # noqa: BLE001 - raised again below, outside the task group's wrapping
            failure = error
        finally:
            relay.close()
    if failure is not None:
        raise failure
    return response


async def call(spec: ToolSpec[Any, Any], service: str, arguments: dict[str, Any] | None, caller: Caller,
               notify: Notify | None = None) -> types.CallToolResult:
    try:
        if not caller.may_use(service):
            raise PermissionDenied(f"{caller.principal} may not use the {service} service")
        if not caller.has_any(service, spec.scopes):
            raise PermissionDenied(f"{spec.name} needs one of the scopes {', '.join(spec.scopes)}")
        check_request_size(arguments or {}, "arguments")
        check_storable_json(arguments or {}, "arguments")
        request = spec.request.model_validate(arguments or {})
        if spec.progress_handler is not None:
            response = await _run_reporting(spec.progress_handler, request, caller, notify)
        else:
            response = await anyio.to_thread.run_sync(spec.handler, request, caller)
    except Exception as error:  # noqa: BLE001 - the boundary: every error is mapped to one shape here
        return _map_exception(spec.name, error)
    structured = response.to_json()
    attachments = response.attachments() if isinstance(response, HasAttachments) else []
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False)), *attachments],
        structured_content=structured,
    )


def build_mcp_server(name: str, registries: Iterable[ToolRegistry], *, instructions: str | None = None,
                     default_caller: Caller = LOCAL_USER) -> Server[Any]:
    """A low-level MCP server exposing the tools of the given services."""
    specs: dict[str, tuple[str, ToolSpec[Any, Any]]] = {}
    for registry in registries:
        for spec in registry.tools.values():
            specs[spec.name] = (registry.service, spec)
    definitions = [spec.definition() for _, spec in specs.values()]

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=definitions)

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        found = specs.get(params.name)
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name[:100]}")
        service, spec = found
        return await call(spec, service, params.arguments, caller_of(ctx, default_caller), ctx.session.report_progress)

    return Server(
        name,
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
