"""Wire models of the analytics service: the Conversational Analytics ``Message`` exactly as its reference
(seed 003), the data agent resources of the geminidataanalytics API (``DataAgent``, ``Context``,
``ExampleQuery``, ``GlossaryTerm``, ``Conversation``), and the requests of the tools Google's MCP Toolbox
names (``ask_data_insights``, ``ask_data_agent``…), whose parameters are snake_case as in the Toolbox.

A table is referenced as Google references a BigQuery table, ``{projectId, datasetId, tableId}``: in
Convener ``datasetId`` is the name of a registered SQL source and ``tableId`` a table in it; ``projectId``
is optional and, when given, must be the agent's project.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import mcp_types as types
from pydantic import ConfigDict, Field

from convener.api.protojson import Bytes, ProtoModel, Struct, Timestamp
from convener.ces.models import PageSize, PageToken

# --- Seed 003: Message ---------------------------------------------------------------------------------


class TextType(StrEnum):
    TEXT_TYPE_UNSPECIFIED = "TEXT_TYPE_UNSPECIFIED"
    FINAL_RESPONSE = "FINAL_RESPONSE"
    THOUGHT = "THOUGHT"
    PROGRESS = "PROGRESS"
    FOLLOWUP_QUESTIONS = "FOLLOWUP_QUESTIONS"


class TextMessage(ProtoModel):
    parts: list[str] | None = Field(None, description="Optional. The parts of the message.")
    text_type: TextType | None = Field(None, description="Optional. The type of the text message.")
    thought_signature: Bytes | None = Field(None, description="Optional. An opaque signature for a thought.")


class SchemaField(ProtoModel):
    """A column (Google's ``Field``)."""

    name: str | None = Field(None, description="Optional. The name of the field.")
    type: str | None = Field(None, description="Optional. The type of the field: STRING, INTEGER, FLOAT, "
                                               "NUMERIC, BOOLEAN, DATE, DATETIME, TIMESTAMP, TIME, BYTES, "
                                               "JSON or RECORD.")
    description: str | None = Field(None, description="Optional. A brief description of the field.")
    mode: str | None = Field(None, description="Optional. NULLABLE, REQUIRED or REPEATED.")
    synonyms: list[str] | None = Field(None, description="Optional. Other names for the field.")
    tags: list[str] | None = Field(None, description="Optional. Tags of the field.")
    display_name: str | None = Field(None, description="Optional. Field display name.")
    subfields: list[SchemaField] | None = Field(None, description="Optional. Fields of a RECORD.")
    category: str | None = Field(None, description="Optional. DIMENSION or MEASURE, when known.")
    value_format: str | None = Field(None, description="Optional. How values are formatted in formattedData.")


class Schema(ProtoModel):
    fields: list[SchemaField] | None = Field(None, description="Optional. The fields in the schema.")
    description: str | None = Field(None, description="Optional. A textual description of the table.")
    synonyms: list[str] | None = Field(None, description="Optional. Other names for the table.")
    tags: list[str] | None = Field(None, description="Optional. Tags of the table.")
    display_name: str | None = Field(None, description="Optional. Table display name.")


class TableReference(ProtoModel):
    """Google's ``BigQueryTableReference``; in Convener ``datasetId`` names a registered SQL source."""

    project_id: str | None = Field(None, description="Optional. The project; in Convener the agent's project "
                                                     "(any value is accepted for inline context).")
    dataset_id: str = Field(description="Required. The SQL source (as registered with add_sql_source).")
    table_id: str = Field(description="Required. The table in that source.")
    schema_: Schema | None = Field(None, alias="schema", description="Optional. The table's schema; filled in "
                                                                    "from the source when omitted.")


class Datasource(ProtoModel):
    schema_: Schema | None = Field(None, alias="schema", description="Optional. The schema of the datasource.")
    struct_schema: Struct | None = Field(None, description="Optional. A struct representation of the schema.")
    bigquery_table_reference: TableReference | None = Field(
        None, description="A reference to a table (in Convener: datasetId is the SQL source).")
    studio_datasource_id: str | None = Field(None, description="A reference to a Looker Studio datasource "
                                                               "(not served by Convener).")
    looker_explore_reference: Struct | None = Field(None, description="A reference to a Looker explore (not "
                                                                      "served by Convener).")
    bigquery_property_graph_reference: Struct | None = Field(None, description="A reference to a BigQuery "
                                                                               "property graph (not served).")


class SchemaQuery(ProtoModel):
    question: str | None = Field(None, description="Optional. The question to resolve the schema for.")


class SchemaResult(ProtoModel):
    datasources: list[Datasource] | None = Field(None, description="Optional. The datasources used.")


class SchemaMessage(ProtoModel):
    query: SchemaQuery | None = None
    result: SchemaResult | None = None


class QueryParameter(ProtoModel):
    name: str = Field(description="Required. The name of the parameter reference in the SQL query (@name).")
    description: str | None = Field(None, description="Optional. What the parameter means, used to extract "
                                                      "its value from a question.")
    data_type: str = Field(description='Required. The data type, e.g. "STRING", "INT64", "FLOAT64", "DATE", '
                                       '"BOOL".')


class ExampleQuery(ProtoModel):
    sql_query: str | None = Field(None, description="Optional. The SQL query that answers the question; "
                                                    "parameters are written @name.")
    natural_language_question: str | None = Field(None, description="Optional. A question a user might ask.")
    parameters: list[QueryParameter] | None = Field(None, description="Optional. The query parameters.")


class GlossaryTerm(ProtoModel):
    display_name: str = Field(description="Required. The term, e.g. \"fuel economy\".")
    description: str | None = Field(None, description="Optional. What it means; naming a column maps the term "
                                                      "to that column.")
    labels: list[str] | None = Field(None, description="Optional. Synonyms of the term.")


class DataQuery(ProtoModel):
    question: str | None = Field(None, description="Optional. A natural language question to answer.")
    name: str | None = Field(None, description="Optional. A snake_case name for the query.")
    datasources: list[Datasource] | None = Field(None, description="Optional. The datasources available.")
    looker: Struct | None = Field(None, description="Optional. A Looker query (not served by Convener).")


class DataResult(ProtoModel):
    name: str | None = Field(None, description="Optional. A snake_case name for the result.")
    schema_: Schema | None = Field(None, alias="schema", description="Optional. The schema of the data.")
    data: list[Struct] | None = Field(None, description="Optional. The rows; simple values as strings.")
    formatted_data: list[Struct] | None = Field(None, description="Optional. The rows, formatted for people.")


class QueryParameterValues(ProtoModel):
    name: str = Field(description="Required. The name of the parameter.")
    value: str = Field(description="Required. The value of the parameter.")


class MatchedQuery(ProtoModel):
    example_query: ExampleQuery | None = Field(None, description="The example query that was matched.")
    query_parameter_values: list[QueryParameterValues] | None = Field(
        None, description="The values extracted for the query parameters.")


class DataMessage(ProtoModel):
    query: DataQuery | None = None
    generated_sql: str | None = None
    result: DataResult | None = None
    big_query_job: Struct | None = Field(None, description="A BigQuery job (never set by Convener).")
    matched_query: MatchedQuery | None = None


class AnalysisQuery(ProtoModel):
    question: str | None = None
    data_result_names: list[str] | None = None


class AnalysisEvent(ProtoModel):
    planner_reasoning: str | None = None
    coder_instruction: str | None = None
    code: str | None = None
    execution_output: str | None = None
    execution_error: str | None = None
    result_vega_chart_json: str | None = None
    result_natural_language: str | None = None
    result_csv_data: str | None = None
    result_reference_data: str | None = None
    error: str | None = None


class AnalysisMessage(ProtoModel):
    query: AnalysisQuery | None = None
    progress_event: AnalysisEvent | None = None


class ChartQuery(ProtoModel):
    instructions: str | None = None
    data_result_name: str | None = None


class Blob(ProtoModel):
    mime_type: str
    data: Bytes


class ChartResult(ProtoModel):
    vega_config: Struct | None = Field(None, description="Optional. The Vega-Lite specification of the chart.")
    image: Blob | None = Field(None, description="Optional. The chart rendered (PNG, or SVG when asked).")


class ChartMessage(ProtoModel):
    query: ChartQuery | None = None
    result: ChartResult | None = None


class ErrorMessage(ProtoModel):
    text: str | None = Field(None, description="Output only. The text of the error.")


class ExampleQueries(ProtoModel):
    example_queries: list[ExampleQuery] | None = None


class CitationSource(ProtoModel):
    id: str | None = None
    title: str | None = None
    uri: str | None = None
    example_query: ExampleQuery | None = None
    glossary_term: GlossaryTerm | None = None


class TextMessageCitationAnchor(ProtoModel):
    part_index: int | None = None
    start_offset_bytes: int | None = None
    end_offset_bytes: int | None = None
    source_ids: list[str] | None = None


class CitationAnchor(ProtoModel):
    text_message_anchor: TextMessageCitationAnchor | None = None


class Citation(ProtoModel):
    sources: list[CitationSource] | None = None
    anchors: list[CitationAnchor] | None = None


class SystemMessage(ProtoModel):
    citation: Citation | None = None
    text: TextMessage | None = None
    schema_: SchemaMessage | None = Field(None, alias="schema")
    data: DataMessage | None = None
    analysis: AnalysisMessage | None = None
    chart: ChartMessage | None = None
    error: ErrorMessage | None = None
    example_queries: ExampleQueries | None = None
    group_id: int | None = Field(None, description="Identifies the group the event belongs to: messages of one "
                                                   "step of the answer share it.")


class UserMessage(ProtoModel):
    text: str | None = None


class Message(ProtoModel):
    timestamp: Timestamp | None = Field(None, description="Output only. When the message was received or "
                                                          "created.")
    message_id: str | None = Field(None, description="Optional. Unique id of the message in the conversation.")
    user_message: UserMessage | None = None
    system_message: SystemMessage | None = None


# --- Data agents -----------------------------------------------------------------------------------------


class ImageFormat(StrEnum):
    PNG = "PNG"
    SVG = "SVG"
    NO_IMAGE = "NO_IMAGE"


class ChartImageOptions(ProtoModel):
    no_image: dict[str, Any] | None = Field(None, description="Set ({}) for no rendered image.")
    svg: dict[str, Any] | None = Field(None, description="Set ({}) for an SVG image instead of PNG.")


class ChartOptions(ProtoModel):
    image: ChartImageOptions | None = Field(None, description="How to render charts; PNG by default.")


class PythonOptions(ProtoModel):
    enabled: bool | None = Field(None, description="Whether Python analysis may run (default false).")


class AnalysisOptions(ProtoModel):
    python: PythonOptions | None = Field(None, description="Optional. Python analysis of query results.")


class ConversationOptions(ProtoModel):
    chart: ChartOptions | None = Field(None, description="Optional. How charts are made.")
    analysis: AnalysisOptions | None = Field(None, description="Optional. Whether analysis may run.")


class BigQueryTableReferences(ProtoModel):
    table_references: list[TableReference] = Field(description="Required. The tables.")


class DatasourceReferences(ProtoModel):
    bq: BigQueryTableReferences | None = Field(None, description="Tables of registered SQL sources.")


class SchemaPaths(ProtoModel):
    table_fqn: str = Field(description="Required. The table, as source.table.")
    paths: list[str] = Field(description="Required. The columns joined on, in order.")


class SchemaRelationship(ProtoModel):
    left_schema_paths: SchemaPaths = Field(description="Required. One side of the join.")
    right_schema_paths: SchemaPaths = Field(description="Required. The other side of the join.")
    sources: list[str] | None = Field(None, description="Where the relationship comes from, e.g. USER_PROVIDED.")
    confidence_score: float | None = Field(None, description="Optional. How sure the relationship is, 0-1.")


class Context(ProtoModel):
    system_instruction: str | None = Field(None, description="Optional. Business context and instructions.")
    datasource_references: DatasourceReferences | None = Field(None, description="Required. The data available.")
    options: ConversationOptions | None = Field(None, description="Optional. Chart and analysis options.")
    example_queries: list[ExampleQuery] | None = Field(
        None, description="Optional. Questions with the SQL that answers them; matched first, offline too.")
    glossary_terms: list[GlossaryTerm] | None = Field(None, description="Optional. Business terms and synonyms.")
    schema_relationships: list[SchemaRelationship] | None = Field(
        None, description="Optional. How tables join, given to a model writing SQL.")


class DataAnalyticsAgent(ProtoModel):
    staging_context: Context | None = Field(None, description="Optional. The context being edited; "
                                                              "ask_data_agent can try it with staging: true.")
    published_context: Context | None = Field(None, description="Optional. The context conversations use.")
    last_published_context: Context | None = Field(None, description="Output only. The context published "
                                                                     "before the current one.")


class DataAgent(ProtoModel):
    name: str | None = Field(None, description="Identifier. projects/{project}/locations/{location}/dataAgents/"
                                               "{data_agent}.")
    display_name: str | None = Field(None, description="Optional. The agent's name for people.")
    description: str | None = Field(None, description="Optional. What the agent answers.")
    labels: dict[str, str] | None = Field(None, description="Optional. Labels as key/value pairs.")
    create_time: Timestamp | None = Field(None, description="Output only. When the agent was created.")
    update_time: Timestamp | None = Field(None, description="Output only. When the agent last changed.")
    data_analytics_agent: DataAnalyticsAgent | None = Field(
        None, description="Optional. The agent's staging and published contexts.")


class Conversation(ProtoModel):
    name: str | None = Field(None, description="Identifier. projects/{p}/locations/{l}/conversations/{c}.")
    agents: list[str] | None = Field(None, description="Required. The data agents of the conversation.")
    create_time: Timestamp | None = None
    last_used_time: Timestamp | None = None
    labels: dict[str, str] | None = None


# --- Tool requests and responses ---------------------------------------------------------------------------


class ToolboxRequest(ProtoModel):
    """Parameters in snake_case, as the MCP Toolbox's Conversational Analytics tools take them."""

    model_config = ConfigDict(alias_generator=None, populate_by_name=True, extra="forbid")


Question = Annotated[str, Field(description="The question, potentially including conversation history and "
                                            "system instructions for context; at most 10,000 characters.")]


class AskDataInsightsRequest(ToolboxRequest):
    user_query_with_context: Question
    table_references: str | list[TableReference] = Field(
        description='The tables to use, as a JSON string (or array) of objects with "projectId", "datasetId" '
                    '(the SQL source) and "tableId", e.g. \'[{"datasetId": "demo", "tableId": "cars"}]\'.')


class AskDataAgentRequest(ToolboxRequest):
    data_agent_id: str = Field(description="The ID of the data agent to ask (or its full name).")
    user_query_with_context: Question
    conversation_id: str | None = Field(
        None, description="Convener extension: continue this conversation (its ID or name), so follow-up "
                          "questions can refer to earlier answers. Without it a new conversation is started; "
                          "its name is in the response.")
    staging: bool | None = Field(None, description="Convener extension: use the agent's staging context "
                                                   "instead of the published one.")


class AskResponse(ProtoModel):
    messages: list[Message] | None = Field(None, description="The conversation turn: the user message, then "
                                                             "the system messages in order.")
    conversation: str | None = Field(None, description="The conversation the turn belongs to (ask_data_agent).")

    def attachments(self) -> list[types.ImageContent]:
        """Each rendered chart, also as MCP image content, so that clients display it."""
        return [types.ImageContent(type="image", data=m.system_message.chart.result.image.data,
                                   mime_type=m.system_message.chart.result.image.mime_type)
                for m in self.messages or []
                if m.system_message and m.system_message.chart and m.system_message.chart.result
                and m.system_message.chart.result.image]


class ListAccessibleDataAgentsRequest(ToolboxRequest):
    page_size: int | None = Field(None, description="Optional. At most this many agents (default 50, at most "
                                                    "1000).")
    page_token: str | None = Field(None, description="Optional. nextPageToken of a previous call.")


class ListDataAgentsResponse(ProtoModel):
    data_agents: list[DataAgent] | None = None
    next_page_token: str | None = None


class DataAgentIdRequest(ToolboxRequest):
    data_agent_id: str = Field(description="The ID of the data agent (or its full name).")


class CreateDataAgentRequest(ToolboxRequest):
    data_agent_id: str = Field(description="The ID of the new agent: 1-63 lowercase letters, digits and "
                                           "hyphens, starting with a letter.")
    data_agent: DataAgent = Field(description="The agent: displayName, description, labels and "
                                              "dataAnalyticsAgent.stagingContext/publishedContext.")


class UpdateDataAgentRequest(ToolboxRequest):
    data_agent_id: str = Field(description="The ID of the data agent (or its full name).")
    data_agent: DataAgent = Field(description="The fields to change, as named by update_mask.")
    update_mask: str | None = Field(
        None, description="Comma-separated fields to replace, e.g. \"description,data_analytics_agent."
                          "staging_context\"; unset replaces every field given.")
    publish: bool | None = Field(None, description="Convener extension: afterwards publish the staging context "
                                                   "(the published one becomes lastPublishedContext).")


class DeleteDataAgentResponse(ProtoModel):
    name: str | None = None


class ListConversationsRequest(ToolboxRequest):
    data_agent_id: str | None = Field(None, description="Only conversations with this agent.")
    page_size: PageSize = None
    page_token: PageToken = None


class ListConversationsResponse(ProtoModel):
    conversations: list[Conversation] | None = None
    next_page_token: str | None = None


class ListConversationMessagesRequest(ToolboxRequest):
    conversation_id: str = Field(description="The conversation's ID or name.")
    page_size: PageSize = None
    page_token: PageToken = None


class ListConversationMessagesResponse(ProtoModel):
    messages: list[Message] | None = None
    next_page_token: str | None = None


# --- SQL sources ------------------------------------------------------------------------------------------


class SqlSource(ProtoModel):
    name: str | None = Field(None, description="The source's name, used as datasetId in table references.")
    kind: str | None = Field(None, description="duckdb, files (CSV/Parquet/JSON as views), sqlite, postgresql, "
                                               "sqlalchemy, or convener (Convener's own records).")
    location: str | None = Field(None, description="The file, folder or URL (passwords masked).")
    description: str | None = None
    create_time: Timestamp | None = None


class AddSqlSourceRequest(ToolboxRequest):
    name: str = Field(description="The source's name: 1-63 lowercase letters, digits, _ or -.")
    location: str = Field(description="A DuckDB or SQLite file, a CSV/Parquet/JSON file or folder, or a "
                                      "database URL such as postgresql://user@host/db.")
    description: str | None = Field(None, description="Optional. What the data is, for people and prompts.")


class SqlSourceNameRequest(ToolboxRequest):
    name: str = Field(description="The source's name.")


class ListSqlSourcesRequest(ToolboxRequest):
    pass


class ListSqlSourcesResponse(ProtoModel):
    sql_sources: list[SqlSource] | None = None


class DescribeSqlSourceResponse(ProtoModel):
    source: SqlSource | None = None
    datasources: list[Datasource] | None = Field(None, description="Each table with its schema: columns, types, "
                                                                   "descriptions and sample values (in tags).")
