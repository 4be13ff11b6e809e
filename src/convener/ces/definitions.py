"""Wire models of what an app is made of: agents, tools, toolsets, guardrails and app versions.

Field for field as in Google's CES v1 reference (Agent, Tool, Toolset, Guardrail, Callback,
TriggerAction, AppVersion). Convener adds agent kinds that run without Google (``playbookAgent``,
``remoteAgent``, ``pythonAgent``), an ``entryPoint`` for python function tools and callbacks, and
stdio MCP servers for toolsets; each addition is marked "Convener extension" in its description.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, JsonValue, model_validator

from convener.api.protojson import Duration, ProtoModel, Timestamp
from convener.ces.models import App, ModelSettings, Schema, at_most_one

AGENT_KINDS = ("llm_agent", "playbook_agent", "remote_agent", "python_agent", "remote_dialogflow_agent")
TOOL_KINDS = ("client_function", "open_api_tool", "python_function")
TOOLSET_KINDS = ("mcp_toolset",)
GUARDRAIL_KINDS = ("content_filter", "llm_prompt_security", "llm_policy", "model_safety", "code_callback")
ACTION_KINDS = ("respond_immediately", "transfer_agent", "generative_answer")
CALLBACK_LISTS = ("before_agent_callbacks", "after_agent_callbacks", "before_model_callbacks",
                  "after_model_callbacks", "before_tool_callbacks", "after_tool_callbacks")


class LlmAgent(ProtoModel):
    """The default kind: instruction, tools and child agents run through the configured model."""


class PlaybookAgent(ProtoModel):
    """Convener extension: a model-free agent defined by intents, slots and steps (see docs/agents.md)."""

    intents: list[dict[str, JsonValue]] | None = Field(None, description="What users ask for: patterns, keywords or examples, slots, and the steps to run.")
    events: dict[str, JsonValue] | None = Field(None, description="Steps to run when a named event arrives, by event name.")
    fallback: list[dict[str, JsonValue]] | None = Field(None, description="Steps to run when no intent matches.")
    example_threshold: float | None = Field(None, description="Least word-overlap similarity (0-1) for an example phrase to match; default 0.5.")
    max_reprompts: int | None = Field(None, description="How often a missing slot is asked for again before the fallback; default 2.")
    error_reply: str | None = Field(None, description="What the agent says when a step fails (e.g. a template error).")


class RemoteAgent(ProtoModel):
    """Convener extension: an agent behind an HTTP webhook speaking the documented JSON turn protocol."""

    url: str | None = Field(None, description="http(s) URL the turn is POSTed to.")
    timeout: Duration | None = Field(None, description="Deadline of one turn; default 30s.")
    headers: dict[str, str] | None = Field(None, description="Extra request headers, e.g. Authorization.")


class PythonAgent(ProtoModel):
    """Convener extension: an agent implemented by a Python callable speaking the same turn protocol."""

    entry_point: str | None = Field(None, description="module:callable, in a module the server allows.")
    timeout: Duration | None = Field(None, description="Deadline of one turn; default 30s.")


class RemoteDialogflowAgent(ProtoModel):
    agent: str | None = Field(None, description="Not supported by Convener.")
    flow_id: str | None = Field(None, description="Not supported by Convener.")
    environment_id: str | None = Field(None, description="Not supported by Convener.")


class Callback(ProtoModel):
    """Custom code run at a stage of an agent's work (docs/agents.md, "Callbacks and guardrails")."""

    python_code: str | None = Field(None, description="Inline code is not run by Convener; use entryPoint.")
    description: str | None = Field(None, description="What the callback does.")
    disabled: bool | None = Field(None, description="A disabled callback is not run.")
    proactive_execution_enabled: bool | None = Field(
        None, description="Accepted for compatibility; Convener runs after-model callbacks on each model answer."
    )
    entry_point: str | None = Field(
        None, description="Convener extension. module:callable to run, in a module the server allows; it gets one "
                          "dict argument and returns None or a dict of overrides."
    )
    timeout: Duration | None = Field(None, description="Convener extension. Deadline of one run; default 10s.")


class AgentToolset(ProtoModel):
    toolset: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/toolsets/{toolset}")
    tool_ids: list[str] | None = Field(None, description="The toolset's tools to offer; all when empty.")


class Agent(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/agents/{agent}")
    display_name: str | None = Field(None, description="Required. Display name of the agent.")
    description: str | None = Field(None, description="What the agent does; shown to parent agents that may transfer to it.")
    model_settings: ModelSettings | None = Field(None, description="Model and temperature for this agent (llm agents).")
    instruction: str | None = Field(None, description="Instruction for the model (llm agents).")
    tools: list[str] | None = Field(None, description="Tools of the agent: projects/…/apps/{app}/tools/{tool}")
    child_agents: list[str] | None = Field(None, description="Agents this one may transfer to.")
    toolsets: list[AgentToolset] | None = Field(None, description="Toolsets whose tools the agent may call.")
    guardrails: list[str] | None = Field(
        None, description="Guardrails checked on the agent's input and answers: projects/…/apps/{app}/guardrails/{guardrail}"
    )
    before_agent_callbacks: list[Callback] | None = Field(
        None, description="Run in order before the agent handles an input; one may answer instead of the agent."
    )
    after_agent_callbacks: list[Callback] | None = Field(
        None, description="Run in order after the agent answered; one may replace its text replies."
    )
    before_model_callbacks: list[Callback] | None = Field(
        None, description="Run before each model call (llm agents); one may answer instead of the model."
    )
    after_model_callbacks: list[Callback] | None = Field(
        None, description="Run after each model call (llm agents); one may replace the model's text."
    )
    before_tool_callbacks: list[Callback] | None = Field(
        None, description="Run before each server-side tool call; one may change the arguments or skip the tool."
    )
    after_tool_callbacks: list[Callback] | None = Field(
        None, description="Run after each server-side tool call; one may replace the tool's response."
    )
    llm_agent: LlmAgent | None = Field(None, description="The agent is run by the configured model (the default kind).")
    playbook_agent: PlaybookAgent | None = Field(None, description="Convener extension. The agent runs this playbook, with no model.")
    remote_agent: RemoteAgent | None = Field(None, description="Convener extension. The agent is an HTTP webhook.")
    python_agent: PythonAgent | None = Field(None, description="Convener extension. The agent is a Python callable.")
    remote_dialogflow_agent: RemoteDialogflowAgent | None = Field(None, description="Not supported by Convener: rejected.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Checksum for optimistic concurrency on update and delete.")

    @model_validator(mode="after")
    def _one_kind(self) -> Agent:
        at_most_one(self, AGENT_KINDS, "agent_type")
        return self

    @property
    def kind(self) -> str:
        """The agent_type member that is set; an agent with none is an llm agent, as in CES."""
        return next((name for name in AGENT_KINDS if getattr(self, name) is not None), "llm_agent")


class ClientFunction(ProtoModel):
    name: str | None = Field(None, description="Required. The function name the client sees.")
    description: str | None = Field(None, description="What the function does, for the model.")
    parameters: Schema | None = Field(None, description="Schema of the function's arguments.")
    response: Schema | None = Field(None, description="Schema of the function's response.")


class OpenApiTool(ProtoModel):
    open_api_schema: str | None = Field(
        None, description="Required. The OpenAPI 3 document (JSON or YAML), or an http(s) URL to fetch it from."
    )
    name: str | None = Field(None, description="operationId of the operation; optional when there is one.")
    description: str | None = Field(None, description="What the operation does; from the document when unset.")
    ignore_unknown_fields: bool | None = Field(None, description="Accepted for compatibility; responses are passed on whole.")
    url: str | None = Field(None, description="Server URL, overriding the document's servers.")


class PythonFunction(ProtoModel):
    name: str | None = Field(None, description="Name the model sees; the callable's name when unset.")
    python_code: str | None = Field(None, description="Inline code is not run by Convener; use entryPoint.")
    description: str | None = Field(None, description="Output only: the callable's docstring.")
    entry_point: str | None = Field(None, description="Convener extension. module:callable to run.")
    parameters: Schema | None = Field(
        None, description="Convener extension. Parameters; derived from the callable's signature when unset."
    )


class ExecutionType(StrEnum):
    EXECUTION_TYPE_UNSPECIFIED = "EXECUTION_TYPE_UNSPECIFIED"
    SYNCHRONOUS = "SYNCHRONOUS"
    ASYNCHRONOUS = "ASYNCHRONOUS"


class Tool(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/tools/{tool}")
    display_name: str | None = Field(None, description="Output only. Derived from the tool's function name.")
    execution_type: ExecutionType | None = Field(None, description="SYNCHRONOUS (default) or ASYNCHRONOUS; Convener runs every tool synchronously.")
    timeout: Duration | None = Field(None, description="Deadline of one call; default 30s.")
    client_function: ClientFunction | None = Field(None, description="A function the session's client runs and answers with toolResponses.")
    open_api_tool: OpenApiTool | None = Field(None, description="One operation of an OpenAPI 3 document, called over HTTP.")
    python_function: PythonFunction | None = Field(None, description="A Python function, named by entryPoint.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Checksum for optimistic concurrency on update and delete.")

    @model_validator(mode="after")
    def _one_kind(self) -> Tool:
        at_most_one(self, TOOL_KINDS, "tool_type")
        return self

    @property
    def kind(self) -> str | None:
        return next((name for name in TOOL_KINDS if getattr(self, name) is not None), None)


class McpToolset(ProtoModel):
    server_address: str | None = Field(None, description="Streamable HTTP URL of the MCP server.")
    custom_headers: dict[str, str] | None = Field(None, description="Headers sent to the server.")
    command: str | None = Field(None, description="Convener extension. A program speaking MCP over stdio.")
    args: list[str] | None = Field(None, description="Convener extension. Arguments of command.")


class Toolset(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/toolsets/{toolset}")
    display_name: str | None = Field(None, description="Human-readable name of the toolset.")
    description: str | None = Field(None, description="What the toolset offers.")
    timeout: Duration | None = Field(None, description="Deadline of one call; default 30s.")
    execution_type: ExecutionType | None = Field(None, description="SYNCHRONOUS (default) or ASYNCHRONOUS; Convener runs every tool synchronously.")
    mcp_toolset: McpToolset | None = Field(None, description="The MCP server whose tools the toolset offers.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Checksum for optimistic concurrency on update and delete.")


class TriggerResponse(ProtoModel):
    text: str | None = Field(None, description="Required. What the agent says.")
    disabled: bool | None = Field(None, description="A disabled response is not used.")


class RespondImmediately(ProtoModel):
    responses: list[TriggerResponse] | None = Field(
        None, description="Required. Canned responses; Convener says the first one that is not disabled."
    )


class TransferAgent(ProtoModel):
    agent: str | None = Field(
        None, description="Required. The agent the turn goes to: projects/{project}/locations/{location}/apps/{app}/agents/{agent}"
    )


class GenerativeAnswer(ProtoModel):
    prompt: str | None = Field(None, description="Not supported by Convener: rejected.")


class TriggerAction(ProtoModel):
    """What happens when a guardrail triggers."""

    respond_immediately: RespondImmediately | None = Field(None, description="Say a canned response instead.")
    transfer_agent: TransferAgent | None = Field(None, description="Hand the turn to another agent.")
    generative_answer: GenerativeAnswer | None = Field(None, description="Not supported by Convener: rejected.")

    @model_validator(mode="after")
    def _one_action(self) -> TriggerAction:
        at_most_one(self, ACTION_KINDS, "action")
        return self


class MatchType(StrEnum):
    MATCH_TYPE_UNSPECIFIED = "MATCH_TYPE_UNSPECIFIED"
    SIMPLE_STRING_MATCH = "SIMPLE_STRING_MATCH"
    WORD_BOUNDARY_STRING_MATCH = "WORD_BOUNDARY_STRING_MATCH"
    REGEXP_MATCH = "REGEXP_MATCH"


class ContentFilter(ProtoModel):
    banned_contents: list[str] | None = Field(None, description="Banned phrases, in user inputs and agent responses.")
    banned_contents_in_user_input: list[str] | None = Field(None, description="Banned phrases, in user inputs only.")
    banned_contents_in_agent_response: list[str] | None = Field(
        None, description="Banned phrases, in agent responses only."
    )
    match_type: MatchType | None = Field(
        None, description="Required. SIMPLE_STRING_MATCH (substring), WORD_BOUNDARY_STRING_MATCH (whole words) or "
                          "REGEXP_MATCH; always case-insensitive."
    )
    disregard_diacritics: bool | None = Field(None, description="If true, accents are ignored: cafe matches café.")


class CodeCallback(ProtoModel):
    before_agent_callback: Callback | None = Field(
        None, description="Checks the user's input; returns {decision: OK|TRIGGER, reason}."
    )
    after_agent_callback: Callback | None = Field(
        None, description="Checks the agent's text replies; returns {decision: OK|TRIGGER, reason}."
    )
    before_model_callback: Callback | None = Field(
        None, description="Checks each model request (llm agents); returns {decision: OK|TRIGGER, reason}."
    )
    after_model_callback: Callback | None = Field(
        None, description="Checks each model answer (llm agents); returns {decision: OK|TRIGGER, reason}."
    )


class LlmPolicy(ProtoModel):
    max_conversation_messages: int | None = Field(None, description="Not supported by Convener.")
    model_settings: ModelSettings | None = Field(None, description="Not supported by Convener.")
    prompt: str | None = Field(None, description="Not supported by Convener.")
    policy_scope: str | None = Field(None, description="Not supported by Convener.")
    fail_open: bool | None = Field(None, description="Not supported by Convener.")
    allow_short_utterance: bool | None = Field(None, description="Not supported by Convener.")


class LlmPromptSecurity(ProtoModel):
    default_settings: dict[str, JsonValue] | None = Field(None, description="Not supported by Convener.")
    custom_policy: LlmPolicy | None = Field(None, description="Not supported by Convener.")
    fail_open: bool | None = Field(None, description="Not supported by Convener.")


class ModelSafety(ProtoModel):
    safety_settings: list[dict[str, JsonValue]] | None = Field(None, description="Not supported by Convener.")


class Guardrail(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/guardrails/{guardrail}")
    display_name: str | None = Field(None, description="Required. Display name of the guardrail.")
    description: str | None = Field(None, description="What the guardrail guards against.")
    enabled: bool | None = Field(
        None, description="Whether the guardrail is run. As in CES (proto3), unset is false: set true to run it."
    )
    action: TriggerAction | None = Field(
        None, description="What happens when it triggers; when unset, the agent says: Sorry, I can't help with that."
    )
    content_filter: ContentFilter | None = Field(None, description="Triggers on banned phrases in inputs or responses.")
    llm_prompt_security: LlmPromptSecurity | None = Field(None, description="Not supported by Convener: rejected.")
    llm_policy: LlmPolicy | None = Field(None, description="Not supported by Convener: rejected.")
    model_safety: ModelSafety | None = Field(None, description="Not supported by Convener: rejected.")
    code_callback: CodeCallback | None = Field(None, description="Triggers when a Python callable decides TRIGGER.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Checksum for optimistic concurrency on update and delete.")

    @model_validator(mode="after")
    def _one_kind(self) -> Guardrail:
        at_most_one(self, GUARDRAIL_KINDS, "guardrail_type")
        return self

    @property
    def kind(self) -> str | None:
        return next((name for name in GUARDRAIL_KINDS if getattr(self, name) is not None), None)


class AppSnapshot(ProtoModel):
    app: App | None = Field(None, description="The app's settings.")
    agents: list[Agent] | None = Field(None, description="The app's agents.")
    tools: list[Tool] | None = Field(None, description="The app's tools.")
    toolsets: list[Toolset] | None = Field(None, description="The app's toolsets.")
    guardrails: list[Guardrail] | None = Field(None, description="The app's guardrails.")


class AppVersion(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/versions/{version}")
    display_name: str | None = Field(None, description="Human-readable name of the version.")
    description: str | None = Field(None, description="What changed in the version.")
    creator: str | None = Field(None, description="Output only. Who created the version.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    snapshot: AppSnapshot | None = Field(None, description="Output only. The app, agents, tools, toolsets and guardrails.")
    etag: str | None = Field(None, description="Output only.")


def output_only(kind: type[ProtoModel]) -> frozenset[str]:
    """Wire names the service fills in itself and never takes from a request."""
    common = {"name", "createTime", "updateTime", "etag"}
    extra: dict[type[ProtoModel], set[str]] = {Tool: {"displayName"}, AppVersion: {"creator", "snapshot"}}
    return frozenset(common | extra.get(kind, set()))
