"""Checks run when an agent, tool, toolset or guardrail is written, so that what is stored can run.

Every problem is INVALID_ARGUMENT naming the field: an unknown tool or guardrail, a cycle of child
agents, a bad playbook template or banned-content regular expression, an entry point outside the
registered callables, an OpenAPI document that cannot be read, a guardrail kind Convener cannot run.
Checks may also fill output-only fields derived from the definition (a tool's description).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from convener.api.errors import InvalidArgument
from convener.api.protojson import Duration
from convener.ces.catalog import AppParts
from convener.ces.definitions import (
    CALLBACK_LISTS,
    Agent,
    Callback,
    CodeCallback,
    Guardrail,
    McpToolset,
    Tool,
    Toolset,
    TriggerAction,
)
from convener.ces.names import AgentName, AppChildName, GuardrailName, ToolName, ToolsetName
from convener.ces.runtime import content_filter
from convener.ces.runtime.mcp_toolset import check_endpoint, endpoint_of
from convener.ces.runtime.openapi import parse_operation
from convener.ces.runtime.playbook import PlaybookDefinition
from convener.ces.runtime.signatures import parameters_of
from convener.ces.schemas import check_json_schema
from convener.config import Settings
from convener.outside.callables import load_callable
from convener.outside.urls import check_url

FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
MAX_TIMEOUT_SECONDS = 600.0
MAX_REFERENCES = 256
MAX_CALLBACKS = 20
MAX_RESPONSES = 50
MAX_RESPONSE_LENGTH = 4_096
MODEL_CALLBACKS = ("before_model_callbacks", "after_model_callbacks")
UNSUPPORTED_GUARDRAILS = ("llm_prompt_security", "llm_policy", "model_safety")


def _wire(model: type[BaseModel], attribute: str) -> str:
    return model.model_fields[attribute].alias or attribute


def check_timeout(timeout: Duration | None, field: str) -> None:
    if timeout is not None and not 0 < timeout.seconds() <= MAX_TIMEOUT_SECONDS:
        raise InvalidArgument(f"{field} must be more than 0s and at most {MAX_TIMEOUT_SECONDS:g}s")


def _references(values: Sequence[str] | None, kind: type[AppChildName], field: str, owner: AppChildName,
                parts: AppParts) -> list[AppChildName]:
    names = []
    for index, value in enumerate(values or ()):
        if index >= MAX_REFERENCES:
            raise InvalidArgument(f"{field} lists more than {MAX_REFERENCES} entries")
        name = kind.parse(value, f"{field}[{index}]")
        if name.app_name != owner.app_name:
            raise InvalidArgument(f"{field}[{index}]: {value} is not in the app {owner.app_name}")
        if not parts.exists(kind.collection, name.id):
            raise InvalidArgument(f"{field}[{index}]: {kind.collection[:-1]} {value} does not exist")
        names.append(name)
    return names


def _cycle_through(agent_id: str, children: list[str], graph: dict[str, list[str]]) -> list[str] | None:
    """A path of child-agent links that leads from ``agent_id`` back to itself, if there is one."""
    graph = {**graph, agent_id: children}
    stack: list[tuple[str, list[str]]] = [(child, [agent_id, child]) for child in children]
    seen: set[str] = set()
    while stack:
        current, path = stack.pop()
        if current == agent_id:
            return path
        if current in seen:
            continue
        seen.add(current)
        stack.extend((child, [*path, child]) for child in graph.get(current, ()))
    return None


class Checks:
    """The definition checks, bound to the server's settings (allowed modules and commands)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def callback(self, callback: Callback, field: str) -> None:
        if callback.python_code:
            raise InvalidArgument(f"{field}.pythonCode is not run by Convener; name a function with {field}.entryPoint")
        if not callback.entry_point:
            raise InvalidArgument(f"{field}.entryPoint is required: module:callable in an allowed module")
        load_callable(callback.entry_point, self.settings.python_callables, f"{field}.entryPoint")
        check_timeout(callback.timeout, f"{field}.timeout")

    def _agent_callbacks(self, agent: Agent) -> None:
        for attribute in CALLBACK_LISTS:
            field = f"agent.{_wire(Agent, attribute)}"
            callbacks = getattr(agent, attribute) or []
            if len(callbacks) > MAX_CALLBACKS:
                raise InvalidArgument(f"{field} lists more than {MAX_CALLBACKS} callbacks")
            if callbacks and attribute in MODEL_CALLBACKS and agent.kind != "llm_agent":
                raise InvalidArgument(f"{field}: only llm agents call a model; this agent is a {agent.kind}")
            for index, callback in enumerate(callbacks):
                self.callback(callback, f"{field}[{index}]")

    def agent(self, agent: Agent, name: AppChildName, parts: AppParts) -> Agent:
        if not agent.display_name:
            raise InvalidArgument("agent.displayName is required")
        _references(agent.tools, ToolName, "agent.tools", name, parts)
        _references(agent.guardrails, GuardrailName, "agent.guardrails", name, parts)
        self._agent_callbacks(agent)
        for index, toolset in enumerate(agent.toolsets or ()):
            _references([toolset.toolset or ""], ToolsetName, f"agent.toolsets[{index}].toolset", name, parts)
        children = _references(agent.child_agents, AgentName, "agent.childAgents", name, parts)
        graph = {
            agent_id: [AgentName.parse(child, "childAgents").id for child in body.get("childAgents", ())]
            for agent_id, body in parts.bodies("agents").items()
        }
        cycle = _cycle_through(name.id, [child.id for child in children], graph)
        if cycle:
            raise InvalidArgument(f"agent.childAgents: child agents form a cycle: {' -> '.join(cycle)}")
        kind = agent.kind
        if kind == "remote_dialogflow_agent":
            raise InvalidArgument("agent.remoteDialogflowAgent is not supported by Convener; use remoteAgent")
        if kind == "playbook_agent":
            assert agent.playbook_agent is not None
            definition = PlaybookDefinition.parse(agent.playbook_agent.to_json(), "agent.playbookAgent")
            own_tools = {ToolName.parse(tool).id for tool in agent.tools or ()}
            for tool in sorted(definition.tool_ids()):
                if tool not in own_tools:
                    raise InvalidArgument(f"agent.playbookAgent: step calls tool {tool}, which is not in agent.tools")
            for target in sorted(definition.agent_ids()):
                if not parts.exists("agents", target) and target != name.id:
                    raise InvalidArgument(f"agent.playbookAgent: step transfers to agent {target}, which does not exist")
        if kind == "remote_agent":
            assert agent.remote_agent is not None
            check_url(agent.remote_agent.url or "", self.settings.url_hosts, "agent.remoteAgent.url")
            check_timeout(agent.remote_agent.timeout, "agent.remoteAgent.timeout")
        if kind == "python_agent":
            assert agent.python_agent is not None
            load_callable(agent.python_agent.entry_point or "", self.settings.python_callables,
                          "agent.pythonAgent.entryPoint")
            check_timeout(agent.python_agent.timeout, "agent.pythonAgent.timeout")
        return agent

    def tool(self, tool: Tool, name: AppChildName, parts: AppParts) -> Tool:
        check_timeout(tool.timeout, "tool.timeout")
        if tool.client_function is not None:
            client = tool.client_function
            if not FUNCTION_NAME.fullmatch(client.name or ""):
                raise InvalidArgument("tool.clientFunction.name is required: letters, digits, _ and -, at most 64")
            check_json_schema(client.parameters, "tool.clientFunction.parameters")
            check_json_schema(client.response, "tool.clientFunction.response")
            return tool
        if tool.open_api_tool is not None:
            spec = tool.open_api_tool
            operation = parse_operation(spec.open_api_schema or "", name=spec.name, url=spec.url,
                                        field="tool.openApiTool.openApiSchema", allowed_hosts=self.settings.url_hosts)
            described = spec.model_copy(update={
                "name": spec.name or operation.operation_id,
                "description": spec.description or operation.description or None,
            })
            return tool.model_copy(update={"open_api_tool": described})
        if tool.python_function is not None:
            python = tool.python_function
            if python.python_code:
                raise InvalidArgument(
                    "tool.pythonFunction.pythonCode is not run by Convener; name a function with pythonFunction.entryPoint"
                )
            function = load_callable(python.entry_point or "", self.settings.python_callables,
                                     "tool.pythonFunction.entryPoint")
            if python.name is not None and not FUNCTION_NAME.fullmatch(python.name):
                raise InvalidArgument("tool.pythonFunction.name: letters, digits, _ and -, at most 64")
            check_json_schema(python.parameters, "tool.pythonFunction.parameters")
            if python.parameters is None:
                parameters_of(function, "tool.pythonFunction.entryPoint")
            filled = python.model_copy(update={
                "name": python.name or getattr(function, "__name__", None),
                "description": inspect.getdoc(function) or None,
            })
            return tool.model_copy(update={"python_function": filled})
        raise InvalidArgument("tool needs one of clientFunction, openApiTool, pythonFunction")

    def guardrail(self, guardrail: Guardrail, name: AppChildName, parts: AppParts) -> Guardrail:
        if not guardrail.display_name:
            raise InvalidArgument("guardrail.displayName is required")
        kind = guardrail.kind
        if kind is None:
            raise InvalidArgument("guardrail needs one of contentFilter, codeCallback")
        if kind in UNSUPPORTED_GUARDRAILS:
            raise InvalidArgument(f"guardrail.{_wire(Guardrail, kind)} is not supported by Convener; "
                                  "use contentFilter or codeCallback")
        if guardrail.content_filter is not None:
            content_filter.check(guardrail.content_filter, "guardrail.contentFilter")
        if guardrail.code_callback is not None:
            stages = [(attribute, getattr(guardrail.code_callback, attribute))
                      for attribute in CodeCallback.model_fields]
            if all(callback is None for _, callback in stages):
                raise InvalidArgument("guardrail.codeCallback needs at least one of beforeAgentCallback, "
                                      "afterAgentCallback, beforeModelCallback, afterModelCallback")
            for attribute, callback in stages:
                if callback is not None:
                    self.callback(callback, f"guardrail.codeCallback.{_wire(CodeCallback, attribute)}")
        if guardrail.action is not None:
            _check_action(guardrail.action, name, parts)
        return guardrail

    def toolset(self, toolset: Toolset, name: AppChildName, parts: AppParts) -> Toolset:
        check_timeout(toolset.timeout, "toolset.timeout")
        if toolset.mcp_toolset is None:
            raise InvalidArgument("toolset.mcpToolset is required")
        check_endpoint(endpoint_of(toolset.mcp_toolset), self.settings, "toolset.mcpToolset")
        return toolset


def _check_action(action: TriggerAction, owner: AppChildName, parts: AppParts) -> None:
    if action.generative_answer is not None:
        raise InvalidArgument("guardrail.action.generativeAnswer is not supported by Convener: it needs a model to "
                              "write the answer; use respondImmediately or transferAgent")
    if action.respond_immediately is not None:
        field = "guardrail.action.respondImmediately.responses"
        responses = action.respond_immediately.responses or []
        if len(responses) > MAX_RESPONSES:
            raise InvalidArgument(f"{field} lists more than {MAX_RESPONSES} responses")
        for index, response in enumerate(responses):
            if not (response.text or "").strip():
                raise InvalidArgument(f"{field}[{index}].text is required")
            if len(response.text or "") > MAX_RESPONSE_LENGTH:
                raise InvalidArgument(f"{field}[{index}].text is longer than {MAX_RESPONSE_LENGTH} characters")
        if all(response.disabled for response in responses):
            raise InvalidArgument(f"{field} needs a response that is not disabled")
    if action.transfer_agent is not None:
        field = "guardrail.action.transferAgent.agent"
        value = action.transfer_agent.agent or ""
        if not value:
            raise InvalidArgument(f"{field} is required")
        agent = AgentName.parse(value, field)
        if agent.app_name != owner.app_name:
            raise InvalidArgument(f"{field}: {value} is not in the app {owner.app_name}")
        if not parts.exists("agents", agent.id):
            raise InvalidArgument(f"{field}: agent {value} does not exist")


def tool_display_name(tool: Tool) -> dict[str, Any]:
    """CES derives a tool's displayName from its function or operation name."""
    for spec in (tool.client_function, tool.open_api_tool, tool.python_function):
        if spec is not None and spec.name:
            return {"displayName": spec.name}
    return {}
