"""Running an agent's tools: what the model is offered, and one call at a time with a deadline.

A tool call never fails a turn: whatever goes wrong (a slow tool, an HTTP error, an exception in a
Python function) becomes ``{"error": ...}`` as the tool's response and an ``errorInfo`` on the
tool's span, and the agent carries on with that. Client tools are not run here at all: their calls
go back to the session's client, who answers with ``toolResponses``.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from convener.api.errors import ApiError
from convener.ces.definitions import Agent, Tool, Toolset
from convener.ces.models import ToolCall, ToolResponse, ToolsetTool
from convener.ces.runtime.blueprint import Blueprint
from convener.ces.runtime.entrypoints import call_with_deadline
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.signatures import parameters_of
from convener.ces.runtime.tracing import Trace
from convener.config import Settings
from convener.outside.callables import load_callable
from convener.llm.base import ToolDeclaration

# The OpenAPI and MCP clients (httpx, yaml, anyio) are imported when an agent offers or calls such a tool, not
# with this module: agents of Python functions alone, and evaluations that answer tool calls from their mocks,
# never need them.
if TYPE_CHECKING:
    from convener.ces.runtime.mcp_toolset import McpEndpoint
    from convener.ces.runtime.openapi import OpenApiOperation

DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_RESPONSE_CHARS = 200_000
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class ToolRef:
    """A tool of the app (``tool``) or a tool of one of its toolsets (``toolset`` + ``tool_id``)."""

    tool: str | None = None
    toolset: str | None = None
    tool_id: str | None = None

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in (("tool", self.tool), ("toolset", self.toolset), ("toolId", self.tool_id)) if v}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolRef:
        return cls(data.get("tool"), data.get("toolset"), data.get("toolId"))


@dataclass(frozen=True)
class Offered:
    ref: ToolRef
    declaration: ToolDeclaration
    client: bool


def _jsonable(value: Any) -> Any:
    """A tool's return value as JSON; what JSON cannot hold becomes its string form."""
    return json.loads(json.dumps(value, default=str, allow_nan=False))


def as_response(value: Any) -> dict[str, Any]:
    """CES's convention: ``output`` and ``error`` keys; any other value is the output."""
    try:
        value = _jsonable(value)
    except ValueError:
        raise ToolFailure("the tool returned a number JSON cannot hold (NaN or Infinity)", code="INTERNAL") from None
    if isinstance(value, dict) and ({"output", "error"} & value.keys()):
        response = value
    else:
        response = {"output": value}
    if len(json.dumps(response)) > MAX_RESPONSE_CHARS:
        raise ToolFailure(f"the tool's response is larger than {MAX_RESPONSE_CHARS} characters", code="OUT_OF_RANGE")
    return response


@functools.lru_cache(maxsize=128)
def _operation_of(schema: str, name: str | None, url: str | None, hosts: tuple[str, ...]) -> OpenApiOperation:
    """An OpenAPI tool's operation, parsed (and, for a document given by URL, fetched) once, not per call."""
    from convener.ces.runtime.openapi import parse_operation

    return parse_operation(schema, name=name, url=url, field="tool.openApiTool.openApiSchema", allowed_hosts=hosts)


class ToolFakes(Protocol):
    """Answers tool calls instead of the tools (evaluations: mocked responses, FAKE tool-call behaviour)."""

    def has_answer(self, call: ToolCall) -> bool: ...

    def answer(self, call: ToolCall) -> dict[str, Any] | None:
        """The response to give instead of running the tool, or None to run it."""


class Toolbox:
    def __init__(self, blueprint: Blueprint, settings: Settings, trace: Trace, fakes: ToolFakes | None = None) -> None:
        self.blueprint = blueprint
        self.settings = settings
        self.trace = trace
        self.fakes = fakes

    def tool_name(self, tool_id: str) -> str:
        return f"{self.blueprint.app.name}/tools/{tool_id}"

    def toolset_name(self, toolset_id: str) -> str:
        return f"{self.blueprint.app.name}/toolsets/{toolset_id}"

    # -- what an agent is offered --------------------------------------------------------------------

    def offered(self, agent: Agent) -> list[Offered]:
        """The agent's tools as the model sees them, under unique function names."""
        offers: list[Offered] = []
        seen: set[str] = set()

        def unique(name: str) -> str:
            base = _UNSAFE_NAME.sub("_", name)[:60] or "tool"
            candidate, number = base, 2
            while candidate in seen:
                candidate, number = f"{base}_{number}", number + 1
            seen.add(candidate)
            return candidate

        for tool_name in agent.tools or ():
            tool_id = tool_name.rsplit("/", 1)[-1]
            tool = self.blueprint.tools.get(tool_id)
            if tool is None:
                continue  # deleted from the draft since the agent was written; nothing to offer
            try:
                name, description, parameters = self._describe(tool, tool_id)
            except (ApiError, ToolFailure):
                continue  # a tool that cannot be described now (module gone, spec changed) is not offered
            offers.append(Offered(ToolRef(tool=tool_id), ToolDeclaration(unique(name), description, parameters),
                                  client=tool.client_function is not None))
        for selection in agent.toolsets or ():
            toolset_id = (selection.toolset or "").rsplit("/", 1)[-1]
            toolset = self.blueprint.toolsets.get(toolset_id)
            if toolset is None or toolset.mcp_toolset is None:
                continue
            from convener.ces.runtime import mcp_toolset

            try:
                remote = mcp_toolset.list_tools(self._endpoint(toolset), timeout=self._timeout(toolset))
            except (ToolFailure, ApiError):
                continue  # an unreachable server offers nothing this step; the next step asks again
            wanted = set(selection.tool_ids or ())
            for item in remote:
                if wanted and item.name not in wanted:
                    continue
                offers.append(Offered(
                    ToolRef(toolset=toolset_id, tool_id=item.name),
                    ToolDeclaration(unique(item.name), item.description or "", item.input_schema or {"type": "object"}),
                    client=False,
                ))
        return offers

    def _describe(self, tool: Tool, tool_id: str) -> tuple[str, str, dict[str, Any]]:
        if tool.client_function is not None:
            spec = tool.client_function
            parameters = spec.parameters.to_json_schema() if spec.parameters else {"type": "object"}
            return spec.name or tool_id, spec.description or "", parameters
        if tool.python_function is not None:
            python = tool.python_function
            if python.parameters is not None:
                parameters = python.parameters.to_json_schema()
            else:
                parameters = parameters_of(self._function(tool), "tool.pythonFunction.entryPoint")
            return python.name or tool_id, python.description or "", parameters
        if tool.open_api_tool is not None:
            operation = self._operation(tool)
            return (tool.open_api_tool.name or operation.operation_id,
                    tool.open_api_tool.description or operation.description or "", operation.arguments_schema())
        raise ToolFailure(f"tool {tool_id} has no kind Convener can run", code="FAILED_PRECONDITION")

    def is_client(self, ref: ToolRef, args: dict[str, Any]) -> bool:
        """Whether the session's client must answer this call (a client function no fake answers)."""
        tool = self.blueprint.tools.get(ref.tool or "")
        if tool is None or tool.client_function is None:
            return False
        return self.fakes is None or not self.fakes.has_answer(self.tool_call(ref, args, "", None))

    def tool_call(self, ref: ToolRef, args: dict[str, Any], call_id: str, agent: str | None) -> ToolCall:
        """The chunk recording a call, in CES's shape."""
        display = None
        if ref.tool:
            tool = self.blueprint.tools.get(ref.tool)
            display = (tool.display_name if tool else None) or ref.tool
        return ToolCall(
            id=call_id,
            tool=self.tool_name(ref.tool) if ref.tool else None,
            toolset_tool=ToolsetTool(toolset=self.toolset_name(ref.toolset), tool_id=ref.tool_id) if ref.toolset else None,
            display_name=display or ref.tool_id,
            args=args,
            agent_name=agent,
        )

    def tool_response(self, call: ToolCall, response: dict[str, Any]) -> ToolResponse:
        return ToolResponse(
            id=call.id, tool=call.tool, toolset_tool=call.toolset_tool, display_name=call.display_name,
            agent_name=call.agent_name, response=response,
        )

    # -- running -------------------------------------------------------------------------------------

    def run(self, ref: ToolRef, args: dict[str, Any]) -> dict[str, Any]:
        """Call a server-side tool and return its response; failures become ``{"error": ...}``."""
        label = ref.tool or f"{ref.toolset}/{ref.tool_id}"
        with self.trace.span("TOOL", tool=self.tool_name(ref.tool) if ref.tool else None,
                             toolset=self.toolset_name(ref.toolset) if ref.toolset else None,
                             toolId=ref.tool_id, args=args) as span:
            try:
                faked = self.fakes.answer(self.tool_call(ref, args, "", None)) if self.fakes else None
                if faked is not None:
                    span.attributes["faked"] = True
                    response = as_response(faked)
                else:
                    response = self._execute(ref, args)
            except ToolFailure as failure:
                span.fail(failure.code, failure.message)
                response = {"error": failure.message}
            except ApiError as error:  # a definition that no longer holds (module removed from the allow-list)
                span.fail(error.code.name, error.message)
                response = {"error": error.message}
            span.attributes["response"] = response
            span.attributes["label"] = label
        return response

    def _execute(self, ref: ToolRef, args: dict[str, Any]) -> dict[str, Any]:
        if ref.toolset:
            from convener.ces.runtime import mcp_toolset

            toolset = self.blueprint.toolsets.get(ref.toolset)
            if toolset is None or toolset.mcp_toolset is None:
                raise ToolFailure(f"toolset {ref.toolset} does not exist", code="NOT_FOUND")
            return as_response(mcp_toolset.call_tool(self._endpoint(toolset), ref.tool_id or "", args,
                                                     timeout=self._timeout(toolset)).get("output"))
        tool = self.blueprint.tools.get(ref.tool or "")
        if tool is None:
            raise ToolFailure(f"tool {ref.tool} does not exist", code="NOT_FOUND")
        timeout = self._timeout(tool)
        if tool.python_function is not None:
            function = self._function(tool)
            return as_response(call_with_deadline(lambda: function(**args), timeout, f"tool {ref.tool}"))
        if tool.open_api_tool is not None:
            from convener.ces.runtime.openapi import call_operation

            return call_operation(self._operation(tool), args, timeout=timeout,
                                  allowed_hosts=self.settings.url_hosts)
        raise ToolFailure(f"tool {ref.tool} is not run by the server", code="FAILED_PRECONDITION")

    def _endpoint(self, toolset: Toolset) -> McpEndpoint:
        """The toolset's server, checked again now: the operator may have withdrawn a stdio command since."""
        from convener.ces.runtime import mcp_toolset

        assert toolset.mcp_toolset is not None
        endpoint = mcp_toolset.endpoint_of(toolset.mcp_toolset)
        mcp_toolset.check_endpoint(endpoint, self.settings, "toolset.mcpToolset")
        return endpoint

    def _function(self, tool: Tool) -> Any:
        assert tool.python_function is not None
        return load_callable(tool.python_function.entry_point or "", self.settings.python_callables,
                             "tool.pythonFunction.entryPoint")

    def _operation(self, tool: Tool) -> OpenApiOperation:
        assert tool.open_api_tool is not None
        spec = tool.open_api_tool
        return _operation_of(spec.open_api_schema or "", spec.name, spec.url, self.settings.url_hosts)

    @staticmethod
    def _timeout(definition: Any) -> float:
        timeout = getattr(definition, "timeout", None)
        return timeout.seconds() if timeout is not None else DEFAULT_TIMEOUT_SECONDS
