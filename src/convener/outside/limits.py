"""Every size a caller controls, and its limit: one table of documented defaults.

A limit is declared once, here, with what it bounds; the code that enforces it imports the constant.
``docs/limits.md`` is checked against this table by the tests, so a limit cannot go undocumented.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    unit: str
    what: str
    setting: str | None = None
    """The ``CONVENER_*`` setting that changes it, when an operator may."""


LIMITS: dict[str, Limit] = {}


def limit(name: str, value: int, unit: str, what: str, setting: str | None = None) -> int:
    LIMITS[name] = Limit(name, value, unit, what, setting)
    return value


# Declared as: ``RUN_SESSION_TEXT = limit("ces.run_session.text", 100_000, "characters", "one input's text")``.


# YAML, wherever a caller (or a file a caller names) gives it: checked while the events are read, before any
# node is built, so a few hundred bytes of aliases (a "billion laughs") cannot grow into a billion nodes.
YAML_BYTES = limit("yaml.bytes", 5_000_000, "bytes", "one YAML document's text (a reader may be given less)")
YAML_DEPTH = limit("yaml.depth", 100, "levels", "nesting of YAML sequences and mappings")
YAML_NODES = limit("yaml.nodes", 500_000, "nodes", "scalars, sequences and mappings written in one YAML document")
"""App YAML runs 15 to 25 bytes a node: a 5 MB app has about 250,000."""
YAML_ALIASES = limit("yaml.aliases", 100, "references", "YAML alias references (*name) in one document")
YAML_ALIAS_NODES = limit(
    "yaml.alias_nodes", 10_000, "nodes", "nodes that a YAML document's alias references add once expanded"
)

APP_CONTENT_BYTES = limit("ces.app_content", 5_000_000, "bytes", "an app's YAML given to import_app or `apps import`")
APP_ARCHIVE_BYTES = limit("ces.app_archive", 5_000_000, "bytes", "an app archive (zip) start_import_app reads, "
                          "decoded from content or read from a path")
APP_ARCHIVE_ENTRIES = limit("ces.app_archive.entries", 100, "entries", "files and folders in an app archive")
OPENAPI_DOCUMENT_BYTES = limit(
    "ces.openapi_document", 2 * 1024 * 1024, "bytes", "an OpenAPI document, given inline or fetched from its URL"
)
FRONT_MATTER_BYTES = limit(
    "knowledge.front_matter", 64 * 1024, "bytes", "how far a Markdown file's YAML front matter may reach"
)


# Every tool call: the floor under every field's own limit (the HTTP edge bounds the request body first).
REQUEST_BYTES = limit("request.bytes", 8 * 1024 * 1024, "bytes", "a tool call's arguments as compact JSON")
REQUEST_STRING = limit(
    "request.string", 5_000_000, "characters", "any one text in a tool call's arguments (the longest is appContent)"
)
REQUEST_ARRAY = limit("request.array", 10_000, "entries", "any one array or object in a tool call's arguments")
REQUEST_DEPTH = limit("request.depth", 128, "levels", "nesting of arrays and objects in a tool call's arguments")

# ces: sessions and imports
CONVERSATION_LINE_BYTES = limit(
    "ces.import.line", 16 * 1024 * 1024, "bytes", "one line (one Conversation) of a file `import conversations` reads"
)
CONVERSATION_BATCH_BYTES = limit(
    "ces.import.batch", 64 * 1024 * 1024, "bytes", "conversation lines held in memory before they are written"
)
RUN_SESSION_TEXT = limit("ces.run_session.text", 100_000, "characters", "one run_session input's text")
RUN_SESSION_DTMF = limit("ces.run_session.dtmf", 256, "characters", "one run_session input's DTMF digits")

# Names, filters and page tokens (every service)
RESOURCE_NAME_CHARACTERS = limit("api.name", 1024, "characters", "a resource name given to any tool")
FILTER_CHARACTERS = limit("api.filter", 4096, "characters", "an AIP-160 filter")
FILTER_DEPTH = limit("api.filter.depth", 32, "levels", "nesting of parentheses and NOT in a filter")
FILTER_COMPARISONS = limit("api.filter.comparisons", 200, "comparisons", "comparisons in one filter")
PAGE_TOKEN_CHARACTERS = limit("api.page_token", 2048, "characters", "a pageToken")
LIST_SCAN_ROWS = limit("ces.list_conversations.scan", 5_000, "rows", "conversations one list_conversations call "
                       "examines when its filter reads a field no index orders (anything but startTime and source); "
                       "the page may then be short or empty, with a nextPageToken that resumes the scan",
                       setting="CONVENER_LIST_SCAN_ROWS")

# ces: the texts of apps, versions and app parts
DISPLAY_NAME_CHARACTERS = limit(
    "ces.display_name", 512, "characters", "the displayName of an app, or of an agent, tool, toolset or guardrail"
)
DESCRIPTION_CHARACTERS = limit(
    "ces.description", 16_384, "characters", "the description of an app, or of an agent, tool, toolset or guardrail"
)
INSTRUCTION_CHARACTERS = limit(
    "ces.instruction", 100_000, "characters", "an agent's instruction, or an app's globalInstruction"
)
APP_VERSION_TEXT = limit("ces.app_version.text", 16_384, "characters", "an app version's displayName or description")
DEFINITION_BYTES = limit(
    "ces.definition", 1_000_000, "bytes", "one agent, tool, toolset, guardrail or evaluation definition, as JSON"
)
CHANGELOG_RESOURCE_BYTES = limit(
    "ces.changelog.resource", 262_144, "bytes", "what a changelog keeps of a resource before or after a change, and "
    "of its dependent resources, as JSON (past it, unchanged and then the largest fields are left out)"
)
ADK_CONTENT_BYTES = limit(
    "ces.adk_content", 10 * 1024 * 1024, "bytes", "an ADK evaluation set to import (over MCP, request.string comes first)"
)

# chat
CHAT_MESSAGE_TEXT = limit("chat.message_text", 4096, "characters", "a message's text (Google Chat's own limit)")
CHAT_KEYWORDS = limit("chat.keywords", 20, "keywords", "keywords in one search")
CHAT_KEYWORD_CHARACTERS = limit("chat.keyword", 200, "characters", "one search keyword")

# knowledge
KNOWLEDGE_QUERY_CHARACTERS = limit(
    "knowledge.query", 500, "characters", "a search_documents or answer_query query (Google's limit)"
)
DOCUMENT_NAME_CHARACTERS = limit("knowledge.document_name", 500, "characters", "a document's name")
DATA_SOURCE_CHARACTERS = limit("knowledge.data_source", 255, "characters", "a data source's name")

# analytics
DATA_AGENT_TEXT = limit("analytics.data_agent.text", 10_000, "characters", "a data agent's displayName or description")
SQL_CHARACTERS = limit("analytics.sql.characters", 50_000, "characters", "one SQL query a caller, an example query "
                       "or a model wrote")
SQL_NESTING = limit("analytics.sql.nesting", 32, "levels", "parentheses nested in one SQL query, counted before "
                    "it is parsed (the SQL checker's parser is recursive)")


# --- analytics: what one question to a data agent may cost --------------------------------------------

ANALYTICS_ROWS = limit("analytics.result.rows", 1000, "rows", "rows one data agent query returns; more are cut "
                       "off, and the answer says so", setting="CONVENER_ANALYTICS_ROW_LIMIT")
ANALYTICS_RESULT_BYTES = limit("analytics.result.bytes", 4_000_000, "bytes", "one query's result, its values "
                               "counted as text; rows past it are cut off, and the answer says so",
                               setting="CONVENER_ANALYTICS_RESULT_BYTES")
ANALYTICS_VALUE_BYTES = limit("analytics.result.value", 1_000_000, "bytes", "one value a query makes or returns "
                              "(SQLite refuses a longer string or blob as it is made; a longer value from "
                              "another engine ends the query): RESOURCE_EXHAUSTED",
                              setting="CONVENER_ANALYTICS_VALUE_BYTES")
ANALYTICS_SECONDS = limit("analytics.query.time", 30, "seconds", "one query, enforced from outside the engine "
                          "(DuckDB and SQLite interrupt, PostgreSQL cancel): DEADLINE_EXCEEDED",
                          setting="CONVENER_ANALYTICS_TIMEOUT_SECONDS")
ANALYTICS_MEMORY_MB = limit("analytics.engine.memory", 1024, "MB", "memory of one DuckDB data source (a database "
                            "file, a folder of files, a caller's copy of the built-in source): its memory_limit",
                            setting="CONVENER_ANALYTICS_MEMORY_LIMIT_MB")
ANALYTICS_THREADS = limit("analytics.engine.threads", 2, "threads", "threads one DuckDB data source runs a query "
                          "on", setting="CONVENER_ANALYTICS_THREADS")
ANALYTICS_SPILL_MB = limit("analytics.engine.spill", 2048, "MB", "disk one DuckDB data source may spill to, in "
                           "the data dir's analytics-tmp folder", setting="CONVENER_ANALYTICS_SPILL_LIMIT_MB")
ANALYTICS_WORK_MEM_MB = limit("analytics.postgresql.work_mem", 32, "MB", "memory of each sort or hash of a query "
                              "on a PostgreSQL source (work_mem)", setting="CONVENER_ANALYTICS_WORK_MEM_MB")
ANALYTICS_RUNNING = limit("analytics.queries.running", 4, "queries", "data agent queries running at once in one "
                          "server, counting interrupted ones still stopping; more wait, up to their deadline")


# --- the console ------------------------------------------------------------------------------------------

CONSOLE_STREAMS = limit("console.streams", 8, "pages", "console pages running a tool's work while they stream it "
                        "(a playground turn, a data agent's answer) at once in one server; one more is refused")


# --- the gate: what a caller names outside the store -----------------------------------------------------

GATE_PATH = limit("outside.path", 4096, "characters", "a file or folder path a caller names (Linux's own maximum)")
GATE_URL = limit("outside.url", 2048, "characters", "a URL the server is asked to call (OpenAPI, webhook, MCP)")
GATE_DATABASE_URL = limit("outside.database_url", 4096, "characters", "a database URL named as a data source")
GATE_CALLABLE = limit("outside.callable", 300, "characters", "a python entry point, module:qualname")


# --- http: what one request to an MCP endpoint may be ---------------------------------------------------

# What a tool call may carry over HTTP must not be less than what it may carry over stdio: the body holds the
# arguments (request.bytes, request.depth) inside the envelope, params and arguments objects, with room to spare
# for a client that does not write compact JSON.
JSONRPC_BODY_BYTES = limit("http.jsonrpc.body", REQUEST_BYTES + 1024 * 1024, "bytes", "one JSON-RPC request body "
                           "POSTed to an MCP endpoint; a longer one is refused unread (HTTP 413)")
JSONRPC_DEPTH = limit("http.jsonrpc.depth", REQUEST_DEPTH + 3, "levels", "nesting of arrays and objects in one JSON-RPC request "
                      "body, the body itself counting as one")
JSONRPC_METHOD_CHARS = limit("http.jsonrpc.method", 256, "characters", "one JSON-RPC request's method name")
JSONRPC_PROGRESS_TOKEN_CHARS = limit(
    "http.jsonrpc.progress_token", 1024, "characters",
    "a request's params._meta.progressToken, which every progress notification of the call repeats")


# --- the console: what one browser request may bring ------------------------------------------------------

CONSOLE_FORM_BYTES = limit("http.console.form", 16_384, "bytes", "one form the console is sent (signing in, "
                           "signing out); a longer one is refused unread (HTTP 413)")


# --- progress: what a client that reads slowly may make the server hold --------------------------------------

PROGRESS_WAITING = limit(
    "progress.waiting", 32, "notifications", "progress notifications of one call waiting for a client that reads "
    "slower than the work reports; past it the newest replaces the last one waiting")
