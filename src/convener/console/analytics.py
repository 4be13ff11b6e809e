"""The console's analytics pages: the data agents and SQL sources of the analytics location, a data agent's
ask page (the answer's messages in order: text, SQL, rows, the chart drawn, follow-up questions) and the
caller's conversations with data agents.

URLs mirror the resource names the tools use: data agents are ``projects/convener/locations/global/
dataAgents/{id}`` and conversations ``…/conversations/{id}``; SQL sources, which the tools name by a bare
name, are listed under the same location (``…/sqlSources/{name}``). Every page reaches data through
``ConsoleTools``; a chart's Vega-Lite spec is drawn to SVG by the analytics service's own renderer
(``charts.render``) and shown as an ``<img>`` with a data: URI, where an SVG runs no script."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from convener.analytics import charts
from convener.analytics.agents import PARENT
from convener.analytics.models import (
    AskResponse,
    Context,
    DataAgent,
    DataResult,
    Datasource,
    DescribeSqlSourceResponse,
    ListConversationMessagesResponse,
    ListConversationsResponse,
    ListDataAgentsResponse,
    ListSqlSourcesResponse,
    Message,
    SchemaField,
    TextType,
)
from convener.api.errors import ApiError, Code, NotFound
from convener.console.access import Viewer
from convener.console.views import STEPS_MARK, Console, location_of, page_link, streamed_steps
from convener.edge.errors import HTTP_STATUS

ROWS_SHOWN = 50
"""Rows of a result shown on the page; the rest are counted (the tool returns them all)."""
SAMPLE_PREFIX = "sample:"


# --- presentation --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shown:
    """One message of an answer, as its page shows it."""

    kind: str
    """question, thought, progress, final, text, followups, schema, query, sql, example, rows, chart-query,
    chart, analysis, error, examples."""
    text: str = ""
    parts: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    total: int = 0
    """Rows in the result (``rows`` holds at most ROWS_SHOWN of them)."""
    chart_uri: str = ""
    """A data:image/svg+xml URI of the chart, drawn server-side."""
    problem: str = ""
    """Why the chart could not be drawn, as ``CODE: message``."""

    @property
    def cut(self) -> int:
        return self.total - len(self.rows)


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    samples: list[str]


@dataclass(frozen=True)
class TableView:
    source: str
    name: str
    description: str
    columns: list[Column]


Draw = Callable[[dict[str, Any]], str]


def draw_svg(spec: dict[str, Any]) -> str:
    """The chart drawn to SVG by the analytics renderer, as a data: URI for an ``<img>``."""
    svg = charts.render(spec, "svg")
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def message_views(messages: Sequence[Message], draw: Draw = draw_svg) -> list[Shown]:
    """Each message of an answer, in order (a message with nothing to show is left out)."""
    shown: list[Shown] = []
    for message in messages:
        view = _message_view(message, draw)
        if view is not None:
            shown.append(view)
    return shown


_TEXT_KINDS = {TextType.THOUGHT: "thought", TextType.PROGRESS: "progress", TextType.FINAL_RESPONSE: "final",
               TextType.FOLLOWUP_QUESTIONS: "followups"}


def _message_view(message: Message, draw: Draw) -> Shown | None:
    if message.user_message is not None:
        return Shown("question", text=message.user_message.text or "")
    system = message.system_message
    if system is None:
        return None
    if system.text is not None:
        kind = _TEXT_KINDS.get(system.text.text_type or TextType.TEXT_TYPE_UNSPECIFIED, "text")
        return Shown(kind, parts=list(system.text.parts or []))
    if system.schema_ is not None:
        if system.schema_.result is not None:
            return Shown("schema", parts=[_table_name(d) for d in system.schema_.result.datasources or []])
        return None
    if system.data is not None:
        data = system.data
        if data.generated_sql:
            return Shown("sql", text=data.generated_sql)
        if data.result is not None:
            return _rows(data.result)
        if data.matched_query is not None:
            example = data.matched_query.example_query
            values = [f"{v.name} = {v.value}" for v in data.matched_query.query_parameter_values or []]
            return Shown("example", text=(example.natural_language_question or "") if example else "", parts=values)
        if data.query is not None:
            return Shown("query", text=data.query.question or "")
        return None
    if system.analysis is not None and system.analysis.progress_event is not None:
        event = system.analysis.progress_event
        text = event.result_natural_language or event.execution_error or event.execution_output or event.code
        return Shown("analysis", text=text) if text else None
    if system.chart is not None:
        if system.chart.result is not None:
            return _chart(system.chart.result.vega_config, draw)
        if system.chart.query is not None:
            return Shown("chart-query", text=system.chart.query.instructions or "")
        return None
    if system.error is not None:
        return Shown("error", text=system.error.text or "")
    if system.example_queries is not None:
        return Shown("examples", parts=[e.natural_language_question for e in
                                        system.example_queries.example_queries or [] if e.natural_language_question])
    return None


def _table_name(datasource: Datasource) -> str:
    reference = datasource.bigquery_table_reference
    return f"{reference.dataset_id}.{reference.table_id}" if reference else "(a table)"


def _rows(result: DataResult) -> Shown:
    columns = [f.name or "" for f in (result.schema_.fields if result.schema_ else None) or []]
    body = result.formatted_data if result.formatted_data is not None else result.data or []
    rows = [[_cell((row or {}).get(name)) for name in columns] for row in body[:ROWS_SHOWN]]
    return Shown("rows", text=result.name or "", columns=columns, rows=rows, total=len(body))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _chart(spec: dict[str, Any] | None, draw: Draw) -> Shown:
    title = _chart_title(spec)
    if not spec:
        return Shown("chart", text=title, problem="INVALID_ARGUMENT: the chart has no Vega-Lite specification")
    try:
        return Shown("chart", text=title, chart_uri=draw(spec))
    except ApiError as error:
        return Shown("chart", text=title, problem=f"{error.code.name}: {error.message}")


def _chart_title(spec: dict[str, Any] | None) -> str:
    title = (spec or {}).get("title")
    if isinstance(title, dict):
        title = title.get("text")
    if isinstance(title, list):
        title = " ".join(str(line) for line in title)
    return str(title) if title else "Chart"


def table_views(described: DescribeSqlSourceResponse) -> list[TableView]:
    tables = []
    for datasource in described.datasources or []:
        schema = datasource.schema_
        reference = datasource.bigquery_table_reference
        tables.append(TableView(
            source=reference.dataset_id if reference else "", name=reference.table_id if reference else "",
            description=(schema.description or "") if schema else "",
            columns=[_column(f) for f in (schema.fields if schema else None) or []]))
    return tables


def _column(column: SchemaField) -> Column:
    samples = [tag.removeprefix(SAMPLE_PREFIX) for tag in column.tags or [] if tag.startswith(SAMPLE_PREFIX)]
    return Column(column.name or "", column.type or "", column.description or "", samples)


def context_of(agent: DataAgent) -> tuple[str, Context | None]:
    """The context a question uses (the published one), else the staging one, with which it is."""
    body = agent.data_analytics_agent
    if body is not None and body.published_context is not None:
        return "published", body.published_context
    if body is not None and body.staging_context is not None:
        return "staging", body.staging_context
    return "", None


# --- pages ---------------------------------------------------------------------------------------------------


def _analytics_location(request: Request) -> str:
    """The location of the request, which must be the one data agents live in."""
    location = location_of(request)
    if location != PARENT:
        raise NotFound(f"data agents, their conversations and SQL sources live in {PARENT}, not {location}")
    return location


def _id(name: str | None) -> str:
    return (name or "").rsplit("/", 1)[-1]


@dataclass
class AnalyticsPages:
    console: Console

    async def data_agents(self, request: Request, viewer: Viewer) -> Response:
        parent = _analytics_location(request)
        arguments: dict[str, Any] = {}
        if token := request.query_params.get("pageToken"):
            arguments["page_token"] = token
        listed = await self.console.tools.call("list_accessible_data_agents", arguments, viewer.caller,
                                               ListDataAgentsResponse)
        return self.console.render(request, "analytics_agents.html", viewer, parent=parent,
                                   agents=listed.data_agents or [],
                                   next_page=page_link(request, listed.next_page_token))

    async def _agent(self, request: Request, viewer: Viewer) -> tuple[str, DataAgent]:
        name = f"{_analytics_location(request)}/dataAgents/{request.path_params['agent']}"
        agent = await self.console.tools.call("get_data_agent_info", {"data_agent_id": name}, viewer.caller, DataAgent)
        return name, agent

    async def data_agent(self, request: Request, viewer: Viewer) -> Response:
        name, agent = await self._agent(request, viewer)
        which, context = context_of(agent)
        references = context.datasource_references.bq.table_references if (
            context and context.datasource_references and context.datasource_references.bq) else []
        return self.console.render(request, "analytics_agent.html", viewer, name=name, agent=agent, which=which,
                                   context=context, references=references)

    async def ask(self, request: Request, viewer: Viewer) -> Response:
        """GET: the question box (``?question=`` fills it in). POST: asks, and streams the page: what the
        agent has made so far, step by step as it works, then the answer's messages."""
        if request.method == "GET":
            name, agent = await self._agent(request, viewer)
            return self._ask_page(request, viewer, name, agent, request.query_params.get("question", ""), "")
        form = await self.console.checked_form(request)
        if isinstance(form, Response):
            return form
        name, agent = await self._agent(request, viewer)
        question, conversation = form.get("question", ""), form.get("conversation", "")
        arguments: dict[str, Any] = {"data_agent_id": name, "user_query_with_context": question}
        if conversation:
            arguments["conversation_id"] = conversation
        events = self.console.tools.call_reporting("ask_data_agent", arguments, viewer.caller, AskResponse)
        try:
            first = await anext(events)
        except ApiError as error:  # refused before any work: the page answers with the error's status
            if error.code in (Code.PERMISSION_DENIED, Code.UNAUTHENTICATED):
                raise
            return self._ask_page(request, viewer, name, agent, question, conversation,
                                  problem=f"{error.code.name}: {error.message}", status=HTTP_STATUS[error.code])
        head = self._ask_page(request, viewer, name, agent, "", conversation, asked=question, working=True)

        async def finish(answer: AskResponse | None, problem: str) -> Response:
            if answer is None:
                return self._ask_page(request, viewer, name, agent, question, conversation, problem=problem)
            shown = await anyio.to_thread.run_sync(message_views, answer.messages or [])
            return self._ask_page(request, viewer, name, agent, "", answer.conversation or conversation,
                                  shown=shown, asked=question)

        return StreamingResponse(streamed_steps(head, first, events, finish), media_type="text/html; charset=utf-8")

    def _ask_page(self, request: Request, viewer: Viewer, name: str, agent: DataAgent, question: str,
                  conversation: str, *, shown: Sequence[Shown] = (), asked: str = "", problem: str = "",
                  status: int = 200, working: bool = False) -> Response:
        return self.console.render(request, "analytics_ask.html", viewer, status=status, name=name, agent=agent,
                                   question=question, asked=asked, conversation=conversation,
                                   conversation_id=_id(conversation), shown=list(shown), problem=problem,
                                   steps_mark=STEPS_MARK, working=working)

    async def conversations(self, request: Request, viewer: Viewer) -> Response:
        parent = _analytics_location(request)
        agent = request.query_params.get("dataAgent", "")
        arguments: dict[str, Any] = {}
        if agent:
            arguments["data_agent_id"] = agent
        if token := request.query_params.get("pageToken"):
            arguments["page_token"] = token
        listed = await self.console.tools.call("list_data_agent_conversations", arguments, viewer.caller,
                                               ListConversationsResponse)
        return self.console.render(request, "analytics_conversations.html", viewer, parent=parent, agent=agent,
                                   conversations=listed.conversations or [],
                                   next_page=page_link(request, listed.next_page_token),
                                   first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def conversation(self, request: Request, viewer: Viewer) -> Response:
        name = f"{_analytics_location(request)}/conversations/{request.path_params['conversation']}"
        arguments: dict[str, Any] = {"conversation_id": name}
        if token := request.query_params.get("pageToken"):
            arguments["page_token"] = token
        listed = await self.console.tools.call("list_data_agent_messages", arguments, viewer.caller,
                                               ListConversationMessagesResponse)
        shown = await anyio.to_thread.run_sync(message_views, listed.messages or [])
        return self.console.render(request, "analytics_conversation.html", viewer, name=name, shown=shown,
                                   next_page=page_link(request, listed.next_page_token),
                                   first_page=page_link(request, "") if request.query_params.get("pageToken") else "")

    async def sql_sources(self, request: Request, viewer: Viewer) -> Response:
        parent = _analytics_location(request)
        listed = await self.console.tools.call("list_sql_sources", {}, viewer.caller, ListSqlSourcesResponse)
        return self.console.render(request, "analytics_sources.html", viewer, parent=parent,
                                   sources=listed.sql_sources or [])

    async def sql_source(self, request: Request, viewer: Viewer) -> Response:
        parent = _analytics_location(request)
        source = request.path_params["source"]
        described = await self.console.tools.call("describe_sql_source", {"name": source}, viewer.caller,
                                                  DescribeSqlSourceResponse)
        return self.console.render(request, "analytics_source.html", viewer, parent=parent, source=described.source,
                                   source_name=source, tables=table_views(described))

