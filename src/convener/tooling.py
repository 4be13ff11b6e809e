"""The MCP surface: typed tool specs, and the one place errors become ``CODE: message`` results.

A service declares its tools in a ``ToolRegistry`` (name, title, description, request and
response models, annotations, a handler). ``build_mcp_server`` turns registries into a low-level
MCP server whose input and output schemas come from the models, whose results carry
``structuredContent`` plus the same JSON as text, and whose failures are ``isError`` results.
"""

from __future__ import annotations

import dataclasses
import functools
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
from convener.api.tool_schemas import INPUT_SHAPE, SchemaShape, compact, size_of
from convener.auth.caller import LOCAL_USER, Caller
from convener.outside.request_sizes import check_request_size
from convener.progress import Notify, ProgressRelay, Report
from convener.toolsets import EVERYTHING, TOOLSETS, Selection

logger = logging.getLogger(__name__)


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

TOOL_BYTES = 12_000
"""The most one tool may take in ``tools/list`` (name, title, description, annotations and both schemas):
a client's model reads every listed tool on every turn."""
OUTPUT_SCHEMA_BYTES = 2_000
"""The most a tool's output schema may take: typed as deep as fits (see ``api.tool_schemas``)."""
_OUTPUT_DEPTHS: tuple[int | None, ...] = (None, 3, 2, 1, 0)


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
    toolset: str = ""
    """The group clients choose it by (``convener.toolsets``); set by the ``ToolGroup`` that registers it."""

    @property
    def read_only(self) -> bool:
        return bool(self.annotations.read_only_hint)

    @property
    def definition(self) -> types.Tool:
        """The tool as ``tools/list`` shows it (see ``tool_definition``)."""
        annotations = self.annotations.model_copy(update={"title": self.title})
        return tool_definition(self.name, self.title, self.description, self.request, self.response,
                               annotations.model_dump_json(by_alias=True, exclude_none=True))


@functools.cache
def tool_definition(name: str, title: str, description: str, request: type[ProtoModel], response: type[ProtoModel],
                    annotations: str) -> types.Tool:
    """A tool as ``tools/list`` shows it: the input schema whole (a caller writes it), the output schema typed
    as deep as ``OUTPUT_SCHEMA_BYTES`` and ``TOOL_BYTES`` allow (every result still validates). Shaping every
    tool's schemas takes about half a second, so each declaration is shaped once per process, not by each
    server built (every stdio launch, every test's store). ``annotations`` is their JSON (the model is not
    hashable)."""
    input_schema = compact(request.input_json_schema(), INPUT_SHAPE)
    response_schema = response.json_schema()
    tool = None
    for depth in _OUTPUT_DEPTHS:
        output_schema = compact(response_schema, SchemaShape(described_depth=0, typed_depth=depth))
        tool = types.Tool(name=name, title=title, description=description, input_schema=input_schema,
                          output_schema=output_schema,
                          annotations=types.ToolAnnotations.model_validate_json(annotations))
        if size_of(output_schema) <= OUTPUT_SCHEMA_BYTES and listed_size(tool) <= TOOL_BYTES:
            break
    assert tool is not None
    return tool


def listed_size(tool: types.Tool) -> int:
    """Bytes ``tool`` takes in a ``tools/list`` result."""
    return size_of(tool.model_dump(mode="json", by_alias=True, exclude_none=True))


@dataclass
class ToolRegistry:
    """The tools of one service, each in a toolset."""

    service: str
    tools: dict[str, ToolSpec[Any, Any]] = field(default_factory=dict)

    def group(self, toolset: str) -> ToolGroup:
        """Where the tools of ``toolset`` are added."""
        if toolset not in TOOLSETS:
            raise ValueError(f"unknown toolset {toolset}")
        return ToolGroup(self, toolset)

    def add(self, spec: ToolSpec[Any, Any]) -> None:
        if spec.name in self.tools:
            raise ValueError(f"tool {spec.name} is registered twice")
        if spec.toolset not in TOOLSETS:
            raise ValueError(f"tool {spec.name} is in no known toolset; add it through ToolRegistry.group")
        self.tools[spec.name] = spec


@dataclass(frozen=True)
class ToolGroup:
    """The tools of one toolset, as a service registers them."""

    registry: ToolRegistry
    toolset: str

    def add(self, spec: ToolSpec[Any, Any]) -> None:
        self.registry.add(dataclasses.replace(spec, toolset=self.toolset))


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


Left = TypeVar("Left")


def _left_on_request(ctx: ServerRequestContext[Any, Any], name: str, kind: type[Left], default: Left) -> Left:
    """What the HTTP edge left on the request as ``name``; ``default`` over stdio and in process."""
    request = ctx.request
    value = getattr(getattr(request, "state", None), name, None) if request is not None else None
    return value if isinstance(value, kind) else default


def caller_of(ctx: ServerRequestContext[Any, Any], default: Caller = LOCAL_USER) -> Caller:
    """The HTTP middleware leaves the caller on the request; stdio and in-process calls are ``default``
    (the local user, or whom a stdio server was started ``--as``)."""
    return _left_on_request(ctx, "caller", Caller, default)


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


def authorize(spec: ToolSpec[Any, Any], service: str, caller: Caller) -> None:
    """Whether ``caller`` may call ``spec`` of ``service``: PERMISSION_DENIED if not. Every way in (MCP, the
    console) asks this one function, so a key's scopes mean the same everywhere."""
    if not caller.may_use(service):
        raise PermissionDenied(f"{caller.principal} may not use the {service} service")
    if not caller.has_any(service, spec.scopes):
        raise PermissionDenied(f"{spec.name} needs one of the scopes {', '.join(spec.scopes)}")


def parse_arguments(spec: ToolSpec[Req, Any], arguments: dict[str, Any] | None) -> Req:
    """A tool call's arguments as its request model, after the size checks every tool call gets."""
    check_request_size(arguments or {}, "arguments")
    check_storable_json(arguments or {}, "arguments")
    return spec.request.model_validate(arguments or {})


async def call(spec: ToolSpec[Any, Any], service: str, arguments: dict[str, Any] | None, caller: Caller,
               notify: Notify | None = None) -> types.CallToolResult:
    try:
        authorize(spec, service, caller)
        request = parse_arguments(spec, arguments)
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


def specs_of(registries: Iterable[ToolRegistry]) -> list[tuple[str, ToolSpec[Any, Any]]]:
    """Every tool of ``registries`` with its service, in registration order."""
    return [(registry.service, spec) for registry in registries for spec in registry.tools.values()]


def served(specs: Iterable[tuple[str, ToolSpec[Any, Any]]], selection: Selection) -> list[ToolSpec[Any, Any]]:
    """The tools ``selection`` admits, in order."""
    return [spec for _, spec in specs if selection.admits(spec.toolset, spec.read_only)]


def selection_of(ctx: ServerRequestContext[Any, Any], default: Selection) -> Selection:
    """The HTTP edge leaves the connection's toolset selection on the request; stdio serves ``default``."""
    return _left_on_request(ctx, "selection", Selection, default)


def build_mcp_server(name: str, registries: Iterable[ToolRegistry], *, instructions: str | None = None,
                     default_caller: Caller = LOCAL_USER, selection: Selection = EVERYTHING) -> Server[Any]:
    """A low-level MCP server exposing the tools of the given services that a connection's selection admits
    (``selection`` when the connection chose none)."""
    registries = list(registries)
    specs = {spec.name: (service, spec) for service, spec in specs_of(registries)}
    listings: dict[Selection, list[types.Tool]] = {}

    def listed(chosen: Selection) -> list[types.Tool]:
        tools = listings.get(chosen)
        if tools is None:
            tools = listings[chosen] = [spec.definition for spec in served(specs_of(registries), chosen)]
        return tools

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed(selection_of(ctx, selection)))

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        found = specs.get(params.name)
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name[:100]}")
        service, spec = found
        chosen = selection_of(ctx, selection)
        if not chosen.admits(spec.toolset, spec.read_only):
            why = ("this connection serves read-only tools only" if chosen.read_only and not spec.read_only
                   else f"it is in the {spec.toolset} toolset, which this connection does not serve "
                        f"(add ?toolsets={spec.toolset} to the URL, or --toolsets)")
            raise MCPError(types.INVALID_PARAMS, f"tool {spec.name} is not served here: {why}")
        return await call(spec, service, params.arguments, caller_of(ctx, default_caller), ctx.session.report_progress)

    return Server(
        name,
        version=__version__,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
