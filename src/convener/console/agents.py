"""The console's pages of what an app is made of, read-only: its agents, tools, toolsets, guardrails, app
versions and deployments, each kind as a paged list (its ``list_*`` tool, with the tool's own page tokens) and
each resource on its own page (its ``get_*`` tool), with the references between them as links.

URLs mirror the names: ``/console/projects/{p}/locations/{l}/apps/{app}/agents`` (and ``/tools``,
``/toolsets``, ``/guardrails``, ``/versions``, ``/deployments``), and a resource at ``/console/`` + its name.
Every kind's list is read by one helper, ``AgentPages._list``, through the response class the tool answers
with (``part_messages`` makes it per kind)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from convener.api.protojson import ProtoModel, Timestamp
from convener.ces.definitions import Agent, AppVersion, Guardrail, Tool, Toolset
from convener.ces.deployments import Deployment
from convener.ces.names import AgentName, AppChildName, DeploymentName, GuardrailName, ToolName, ToolsetName
from convener.ces.part_tools import part_messages
from convener.ces.requests import ListAppVersionsResponse
from convener.console.access import Viewer
from convener.console.present import pretty
from convener.console.views import Console, location_of, page_link, with_paging

Part = TypeVar("Part", bound=ProtoModel)


def _listed(model: type[ProtoModel], name_type: type[AppChildName], singular: str, plural: str) -> type[ProtoModel]:
    """The response class ``list_<plural>`` answers with (made once per kind, shared with the tools)."""
    return part_messages(model, name_type, singular, plural, singular).listed  # type: ignore[arg-type]


@dataclass(frozen=True)
class PartKind(Generic[Part]):
    """One kind of app part as the console lists and shows it."""

    collection: str
    """The URL's collection segment (``versions`` for app versions)."""
    title: str
    singular: str
    model: type[Part]
    list_tool: str
    get_tool: str
    listed: type[ProtoModel]
    """The class the list tool answers with."""
    field: str
    """The field of ``listed`` that holds the page's items."""
    about: str


AGENTS = PartKind("agents", "Agents", "agent", Agent, "list_agents", "get_agent",
                  _listed(Agent, AgentName, "agent", "agents"), "agents",
                  "The agents of the app: their instructions, tools and the agents they hand over to.")
TOOLS = PartKind("tools", "Tools", "tool", Tool, "list_tools", "get_tool",
                 _listed(Tool, ToolName, "tool", "tools"), "tools",
                 "Functions the agents may call: client functions, OpenAPI operations and Python functions.")
TOOLSETS = PartKind("toolsets", "Toolsets", "toolset", Toolset, "list_toolsets", "get_toolset",
                    _listed(Toolset, ToolsetName, "toolset", "toolsets"), "toolsets",
                    "Other MCP servers whose tools the agents may call.")
GUARDRAILS = PartKind("guardrails", "Guardrails", "guardrail", Guardrail, "list_guardrails", "get_guardrail",
                      _listed(Guardrail, GuardrailName, "guardrail", "guardrails"), "guardrails",
                      "Checks on what users say and agents answer, and what happens when one triggers.")
VERSIONS = PartKind("versions", "Versions", "app version", AppVersion, "list_app_versions", "get_app_version",
                    ListAppVersionsResponse, "app_versions",
                    "Immutable snapshots of the app that sessions and deployments run.")
DEPLOYMENTS = PartKind("deployments", "Deployments", "deployment", Deployment, "list_deployments", "get_deployment",
                       _listed(Deployment, DeploymentName, "deployment", "deployments"), "deployments",
                       "Where the app is served, and the version each runs.")
KINDS: tuple[PartKind[Any], ...] = (AGENTS, TOOLS, TOOLSETS, GUARDRAILS, VERSIONS, DEPLOYMENTS)


# --- what the pages show -------------------------------------------------------------------------------------


def short(name: str | None) -> str:
    return (name or "").rsplit("/", 1)[-1]


def _words(kind: str | None) -> str:
    """``open_api_tool`` → ``open api tool``."""
    return (kind or "").replace("_", " ")


def _json(value: ProtoModel | None) -> str:
    return "" if value is None else pretty(value.to_json())


@dataclass(frozen=True)
class Row:
    """One line of a list page."""

    name: str
    id: str
    title: str
    kind: str
    summary: str
    updated: Timestamp | None


def row(part: ProtoModel) -> Row:
    name = getattr(part, "name", None) or ""
    title = getattr(part, "display_name", None) or short(name)
    kind, summary = "", getattr(part, "description", None) or ""
    updated = getattr(part, "update_time", None) or getattr(part, "create_time", None)
    if isinstance(part, Agent):
        kind = _words(part.kind)
    elif isinstance(part, Tool):
        kind = _words(part.kind)
        summary = tool_description(part)
    elif isinstance(part, Toolset):
        kind = "mcp toolset" if part.mcp_toolset else ""
        summary = summary or toolset_address(part)
    elif isinstance(part, Guardrail):
        kind = _words(part.kind) + ("" if part.enabled else " (disabled)")
    elif isinstance(part, Deployment):
        summary = f"runs {version_label(part.app_version)}"
    return Row(name=name, id=short(name), title=title, kind=kind.strip(), summary=summary, updated=updated)


def tool_description(tool: Tool) -> str:
    body = tool.client_function or tool.open_api_tool or tool.python_function
    return (body.description if body is not None else None) or ""


def toolset_address(toolset: Toolset) -> str:
    mcp = toolset.mcp_toolset
    if mcp is None:
        return ""
    return mcp.server_address or " ".join([mcp.command or "", *(mcp.args or [])]).strip()


def version_label(version: str | None) -> str:
    """A deployment's appVersion as read: its version ID, or "the draft" for ``…/versions/-``."""
    return "the draft" if short(version) == "-" else short(version) or "no version"


@dataclass(frozen=True)
class Section:
    """A titled piece of a resource's definition: text in a <pre>, or pretty JSON."""

    title: str
    text: str = ""
    json: str = ""


def tool_sections(tool: Tool) -> list[Section]:
    sections: list[Section] = []
    if tool.client_function is not None:
        sections += [Section("Parameters", json=_json(tool.client_function.parameters)),
                     Section("Response", json=_json(tool.client_function.response))]
    if tool.python_function is not None:
        sections.append(Section("Parameters", json=_json(tool.python_function.parameters)))
    if tool.open_api_tool is not None:
        sections.append(Section("OpenAPI document", text=tool.open_api_tool.open_api_schema or ""))
    return [section for section in sections if section.text or section.json]


def agent_sections(agent: Agent) -> list[Section]:
    sections = [Section("Instruction", text=agent.instruction or "")]
    for kind in ("playbook_agent", "remote_agent", "python_agent", "remote_dialogflow_agent"):
        sections.append(Section(_words(kind).capitalize(), json=_json(getattr(agent, kind))))
    callbacks = {key: [callback.to_json() for callback in getattr(agent, key) or []]
                 for key in ("before_agent_callbacks", "after_agent_callbacks", "before_model_callbacks",
                             "after_model_callbacks", "before_tool_callbacks", "after_tool_callbacks")}
    if any(callbacks.values()):
        sections.append(Section("Callbacks", json=pretty({key: value for key, value in callbacks.items() if value})))
    return [section for section in sections if section.text or section.json]


# --- the pages -----------------------------------------------------------------------------------------------


def _app(request: Request) -> str:
    return f"{location_of(request)}/apps/{request.path_params['app']}"


class AgentPages:
    def __init__(self, console: Console) -> None:
        self.console = console

    async def _list(self, viewer: Viewer, kind: PartKind[Part], arguments: dict[str, Any]) -> tuple[list[Part], str | None]:
        """A page of ``kind`` under ``arguments["parent"]``, typed, and the next page's token."""
        answered = await self.console.tools.call(kind.list_tool, arguments, viewer.caller, kind.listed)
        items = getattr(answered, kind.field) or []
        return [kind.model.model_validate(item, from_attributes=True) for item in items], \
            getattr(answered, "next_page_token", None)

    async def _get(self, viewer: Viewer, kind: PartKind[Part], name: str) -> Part:
        return await self.console.tools.call(kind.get_tool, {"name": name}, viewer.caller, kind.model)

    def collection(self, kind: PartKind[Any]) -> Callable[[Request, Viewer], Awaitable[Response]]:
        """The list page of ``kind``."""

        async def render(request: Request, viewer: Viewer) -> Response:
            app = _app(request)
            parts, token = await self._list(viewer, kind, with_paging(request, {"parent": app}))
            return self.console.render(
                request, "agents_list.html", viewer, app=app, kind=kind, kinds=KINDS,
                rows=[row(part) for part in parts], next_page=page_link(request, token),
                first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

        return render

    def _name(self, request: Request, kind: PartKind[Any], key: str) -> str:
        return f"{_app(request)}/{kind.collection}/{request.path_params[key]}"

    async def agent(self, request: Request, viewer: Viewer) -> Response:
        agent = await self._get(viewer, AGENTS, self._name(request, AGENTS, "agent"))
        return self.console.render(request, "agents_agent.html", viewer, app=_app(request), agent=agent,
                                   name=agent.name or "", kind=_words(agent.kind), sections=agent_sections(agent),
                                   model=_json(agent.model_settings))

    async def tool(self, request: Request, viewer: Viewer) -> Response:
        tool = await self._get(viewer, TOOLS, self._name(request, TOOLS, "tool"))
        body = tool.client_function or tool.open_api_tool or tool.python_function
        return self.console.render(request, "agents_tool.html", viewer, app=_app(request), tool=tool,
                                   name=tool.name or "", kind=_words(tool.kind), description=tool_description(tool),
                                   function=getattr(body, "name", None) or "",
                                   entry_point=tool.python_function.entry_point if tool.python_function else "",
                                   url=tool.open_api_tool.url if tool.open_api_tool else "",
                                   sections=tool_sections(tool))

    async def toolset(self, request: Request, viewer: Viewer) -> Response:
        toolset = await self._get(viewer, TOOLSETS, self._name(request, TOOLSETS, "toolset"))
        return self.console.render(request, "agents_toolset.html", viewer, app=_app(request), toolset=toolset,
                                   name=toolset.name or "", address=toolset_address(toolset))

    async def guardrail(self, request: Request, viewer: Viewer) -> Response:
        guardrail = await self._get(viewer, GUARDRAILS, self._name(request, GUARDRAILS, "guardrail"))
        definition = getattr(guardrail, guardrail.kind) if guardrail.kind else None
        return self.console.render(request, "agents_guardrail.html", viewer, app=_app(request), guardrail=guardrail,
                                   name=guardrail.name or "", kind=_words(guardrail.kind),
                                   definition=_json(definition), action=_json(guardrail.action))

    async def version(self, request: Request, viewer: Viewer) -> Response:
        version = await self._get(viewer, VERSIONS, self._name(request, VERSIONS, "version"))
        snapshot = version.snapshot
        contents = [] if snapshot is None else [
            (kind, [row(part) for part in getattr(snapshot, kind.collection) or []])
            for kind in (AGENTS, TOOLS, TOOLSETS, GUARDRAILS)]
        return self.console.render(request, "agents_version.html", viewer, app=_app(request), app_version=version,
                                   name=version.name or "", contents=[item for item in contents if item[1]])

    async def deployment(self, request: Request, viewer: Viewer) -> Response:
        deployment = await self._get(viewer, DEPLOYMENTS, self._name(request, DEPLOYMENTS, "deployment"))
        draft = short(deployment.app_version) == "-"
        return self.console.render(request, "agents_deployment.html", viewer, app=_app(request),
                                   deployment=deployment, name=deployment.name or "", draft=draft,
                                   runs=version_label(deployment.app_version),
                                   profile=_json(deployment.channel_profile))
