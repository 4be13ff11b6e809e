"""MCP tools of the analytics service, named and parameterised as in Google's MCP Toolbox
(``ask_data_insights``, ``list_accessible_data_agents``, ``get_data_agent_info``, ``ask_data_agent``,
``create_data_agent``…), so that clients written for Google's work here; plus conversations and the
administration of SQL sources. Changing agents or sources needs the ``analytics.admin`` scope."""

from __future__ import annotations

from convener.analytics.models import (
    AddSqlSourceRequest,
    AskDataAgentRequest,
    AskDataInsightsRequest,
    AskResponse,
    CreateDataAgentRequest,
    DataAgent,
    DataAgentIdRequest,
    DeleteDataAgentResponse,
    DescribeSqlSourceResponse,
    ListAccessibleDataAgentsRequest,
    ListConversationMessagesRequest,
    ListConversationMessagesResponse,
    ListConversationsRequest,
    ListConversationsResponse,
    ListDataAgentsResponse,
    ListSqlSourcesRequest,
    ListSqlSourcesResponse,
    Message,
    SqlSource,
    SqlSourceNameRequest,
    UpdateDataAgentRequest,
)
from convener.analytics.pipeline import Emit, Table, datasource_of
from convener.analytics.service import AnalyticsService
from convener.auth.caller import Caller
from convener.progress import Report
from convener.tooling import CREATES, DELETES, READ_ONLY, UPDATES, ToolRegistry, ToolSpec

ADMIN = ("analytics.admin",)
ASKS = CREATES.model_copy(update={"destructive_hint": False, "idempotent_hint": False})
"""Asking writes the turn to a conversation, and never changes the data asked about."""


def _progress(report: Report | None) -> Emit | None:
    """Each message, as it is made, becomes an MCP progress notification naming its kind."""
    if report is None:
        return None
    count = 0

    def emit(message: Message) -> None:
        nonlocal count
        count += 1
        report(float(count), None, describe(message))

    return emit


def describe(message: Message) -> str:
    """The message's kind as its wire fields name it, e.g. ``data.generatedSql`` or ``text.FINAL_RESPONSE``."""
    wire = message.to_json()
    if "userMessage" in wire:
        return "question received"
    system = {k: v for k, v in wire.get("systemMessage", {}).items() if k not in ("groupId", "citation")}
    for kind, body in system.items():
        inner = body.get("textType") if kind == "text" else next(iter(body), None)
        return f"{kind}.{inner}" if inner else kind
    return "message"


def analytics_tools(analytics: AnalyticsService) -> ToolRegistry:
    registry = ToolRegistry("analytics")
    everyday = registry.group("analytics")
    admin = registry.group("admin")

    def ask_insights(request: AskDataInsightsRequest, caller: Caller, report: Report | None = None) -> AskResponse:
        asked = analytics.ask_inline(request.user_query_with_context, request.table_references, caller,
                                     _progress(report))
        return AskResponse(messages=asked.messages)

    def ask_agent(request: AskDataAgentRequest, caller: Caller, report: Report | None = None) -> AskResponse:
        asked = analytics.ask_agent(request.data_agent_id, request.user_query_with_context,
                                    request.conversation_id, bool(request.staging), caller, _progress(report))
        return AskResponse(messages=asked.messages, conversation=asked.conversation)

    def describe_source(request: SqlSourceNameRequest, caller: Caller) -> DescribeSqlSourceResponse:
        source = analytics.sources.get(request.name)
        with analytics.sources.engine(request.name, caller) as engine:
            tables = [Table(request.name, info, engine) for info in analytics.sources.schema(request.name, engine)]
        return DescribeSqlSourceResponse(source=source, datasources=[datasource_of(t) for t in tables])

    def add_source(request: AddSqlSourceRequest, caller: Caller) -> SqlSource:
        return analytics.sources.add(request.name, request.location, request.description, remote=True)

    def remove_source(request: SqlSourceNameRequest, caller: Caller) -> SqlSource:
        source = analytics.sources.get(request.name)
        analytics.sources.remove(request.name)
        return source

    everyday.add(ToolSpec(
        "ask_data_insights", "Ask data insights",
        "Answers a question about the data in the given tables, with no agent: table_references is a JSON "
        "array of {projectId, datasetId (the SQL source), tableId}. Returns the messages of the answer in "
        "order, as Google's Conversational Analytics Message: the schema used, the SQL, the rows (data and "
        "formattedData), a Vega-Lite chart with its image (also attached as an image), the final response "
        "and follow-up questions. Without a configured model the answer is made offline and says so. Sends "
        "each message as a progress notification when the call carries a progressToken.",
        AskDataInsightsRequest, AskResponse, ASKS, ask_insights, progress_handler=ask_insights,
    ))
    everyday.add(ToolSpec(
        "list_accessible_data_agents", "List accessible data agents",
        "Lists the data agents, with their contexts (datasource references, example queries, glossary).",
        ListAccessibleDataAgentsRequest, ListDataAgentsResponse, READ_ONLY,
        lambda request, caller: analytics.agents.list(request.page_size, request.page_token, caller),
    ))
    everyday.add(ToolSpec(
        "get_data_agent_info", "Get data agent info",
        "Gets a data agent by ID: display name, description, and its staging and published contexts.",
        DataAgentIdRequest, DataAgent, READ_ONLY,
        lambda request, caller: analytics.agents.get(request.data_agent_id),
    ))
    everyday.add(ToolSpec(
        "ask_data_agent", "Ask data agent",
        "Asks a data agent a question, in a conversation: pass the conversation from an earlier answer as "
        "conversation_id to ask a follow-up. Uses the agent's published context (staging: true for its "
        "staging one). Returns the messages of the answer as ask_data_insights does, and the conversation.",
        AskDataAgentRequest, AskResponse, ASKS, ask_agent, progress_handler=ask_agent,
    ))
    admin.add(ToolSpec(
        "create_data_agent", "Create data agent",
        "Creates a data agent: data_agent.dataAnalyticsAgent.publishedContext (and/or stagingContext) holds "
        "systemInstruction, datasourceReferences.bq.tableReferences, exampleQueries (with @parameters), "
        "glossaryTerms, schemaRelationships and options. Needs the analytics.admin scope.",
        CreateDataAgentRequest, DataAgent, CREATES,
        lambda request, caller: analytics.agents.create(request.data_agent_id, request.data_agent, caller),
        scopes=ADMIN,
    ))
    admin.add(ToolSpec(
        "update_data_agent", "Update data agent",
        "Updates the fields of a data agent named by update_mask (display_name, description, labels, "
        "data_analytics_agent.staging_context, data_analytics_agent.published_context); publish: true then "
        "publishes the staging context. Needs the analytics.admin scope.",
        UpdateDataAgentRequest, DataAgent, UPDATES,
        lambda request, caller: analytics.agents.update(request.data_agent_id, request.data_agent,
                                                        request.update_mask, bool(request.publish)),
        scopes=ADMIN,
    ))
    admin.add(ToolSpec(
        "delete_data_agent", "Delete data agent",
        "Deletes a data agent and its conversations. Needs the analytics.admin scope.",
        DataAgentIdRequest, DeleteDataAgentResponse, DELETES,
        lambda request, caller: DeleteDataAgentResponse(name=analytics.agents.delete(request.data_agent_id)),
        scopes=ADMIN,
    ))
    everyday.add(ToolSpec(
        "list_data_agent_conversations", "List data agent conversations",
        "Lists the caller's own conversations with data agents, most recently used first.",
        ListConversationsRequest, ListConversationsResponse, READ_ONLY,
        lambda request, caller: analytics.conversations.list(request.data_agent_id, request.page_size,
                                                             request.page_token, caller),
    ))
    everyday.add(ToolSpec(
        "list_data_agent_messages", "List data agent messages",
        "Lists the messages of one of the caller's conversations with a data agent, oldest first.",
        ListConversationMessagesRequest, ListConversationMessagesResponse, READ_ONLY,
        lambda request, caller: analytics.conversations.messages(request.conversation_id, request.page_size,
                                                                 request.page_token, caller),
    ))
    everyday.add(ToolSpec(
        "list_sql_sources", "List SQL sources",
        "Lists the SQL sources questions can be asked over (datasetId in table references), including the "
        "built-in source convener with Convener's own records.",
        ListSqlSourcesRequest, ListSqlSourcesResponse, READ_ONLY,
        lambda request, caller: ListSqlSourcesResponse(sql_sources=analytics.sources.all()),
    ))
    everyday.add(ToolSpec(
        "describe_sql_source", "Describe SQL source",
        "Shows a SQL source's tables with their columns, types, descriptions and sample values.",
        SqlSourceNameRequest, DescribeSqlSourceResponse, READ_ONLY, describe_source,
    ))
    admin.add(ToolSpec(
        "add_sql_source", "Add SQL source",
        "Registers a SQL source: a DuckDB or SQLite file, a CSV/Parquet/JSON file or folder (inside "
        "CONVENER_ANALYTICS_ROOTS), or a database URL such as postgresql://reader@host/db. It is only ever "
        "read. Needs the analytics.admin scope.",
        AddSqlSourceRequest, SqlSource, CREATES, add_source, scopes=ADMIN,
    ))
    admin.add(ToolSpec(
        "remove_sql_source", "Remove SQL source",
        "Unregisters a SQL source (its data is not touched). Needs the analytics.admin scope.",
        SqlSourceNameRequest, SqlSource, DELETES, remove_source, scopes=ADMIN,
    ))
    return registry
