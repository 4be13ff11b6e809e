"""Wire models of the ces service, field for field as in Google's CES reference (seed 000).

Every field is optional in the model so that proto3's "unset" can be told apart from a default;
``ProtoModel.to_json`` omits what is unset. Output-only fields are filled in by the service.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, JsonValue, model_validator

from convener.api.protojson import Bytes, Duration, Int64, ProtoModel, Struct, Timestamp


class Source(StrEnum):
    """Where a conversation came from."""

    SOURCE_UNSPECIFIED = "SOURCE_UNSPECIFIED"
    LIVE = "LIVE"
    SIMULATOR = "SIMULATOR"
    EVAL = "EVAL"
    AGENT_TOOL = "AGENT_TOOL"


class ChannelType(StrEnum):
    """Deprecated in favour of input types; still derived so old clients can read it."""

    CHANNEL_TYPE_UNSPECIFIED = "CHANNEL_TYPE_UNSPECIFIED"
    TEXT = "TEXT"
    AUDIO = "AUDIO"
    MULTIMODAL = "MULTIMODAL"


class InputType(StrEnum):
    INPUT_TYPE_UNSPECIFIED = "INPUT_TYPE_UNSPECIFIED"
    INPUT_TYPE_TEXT = "INPUT_TYPE_TEXT"
    INPUT_TYPE_EVENT = "INPUT_TYPE_EVENT"
    INPUT_TYPE_AUDIO = "INPUT_TYPE_AUDIO"
    INPUT_TYPE_IMAGE = "INPUT_TYPE_IMAGE"
    INPUT_TYPE_BLOB = "INPUT_TYPE_BLOB"
    INPUT_TYPE_TOOL_RESPONSE = "INPUT_TYPE_TOOL_RESPONSE"
    INPUT_TYPE_VARIABLES = "INPUT_TYPE_VARIABLES"


INPUT_TYPE_BITS = {member.value: 1 << index for index, member in enumerate(InputType)}
"""Input types are stored as a bitmask column so that ``inputTypes:X`` filters use no join."""


class Blob(ProtoModel):
    mime_type: str | None = Field(None, description="IANA MIME type of the data.")
    data: Bytes | None = Field(None, description="Raw bytes, base64-encoded.")


class Image(ProtoModel):
    mime_type: str | None = Field(None, description="image/png, image/jpeg or image/webp.")
    data: Bytes | None = Field(None, description="Raw bytes, base64-encoded.")
    alt_text: str | None = Field(None, description="Alternative text of the image.")


class ToolsetTool(ProtoModel):
    toolset: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/toolsets/{toolset}")
    tool_id: str | None = Field(None, description="ID of the tool within the toolset.")


def at_most_one(model: ProtoModel, fields: tuple[str, ...], union: str) -> None:
    present = [name for name in fields if getattr(model, name) is not None]
    if len(present) > 1:
        aliases = ", ".join(type(model).model_fields[name].alias or name for name in present)
        raise ValueError(f"only one field of the union {union} may be set; got {aliases}")


class _ToolExchange(ProtoModel):
    """Fields a tool call and its response share."""

    id: str | None = Field(None, description="Matches a tool response to its call.")
    display_name: str | None = Field(None, description="Display name of the tool. Output only.")
    parent_tool_call_id: str | None = Field(None, description="The call that caused this one, for sub-agent work.")
    agent_name: str | None = Field(None, description="Readable name of the agent that issued the call.")
    target_app: str | None = Field(None, description="The app the call targets. Output only.")
    tool: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/tools/{tool}")
    toolset_tool: ToolsetTool | None = Field(None, description="The toolset tool, when not a persisted tool.")

    @model_validator(mode="after")
    def _one_tool_identifier(self) -> _ToolExchange:
        at_most_one(self, ("tool", "toolset_tool"), "tool_identifier")
        return self


class ToolCall(_ToolExchange):
    args: Struct | None = Field(None, description="Input parameters and values of the call.")


class ToolResponse(_ToolExchange):
    response: Struct | None = Field(None, description='Result of the call; "output" and "error" keys by convention.')


class AgentTransfer(ProtoModel):
    target_agent: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/agents/{agent}")
    display_name: str | None = Field(None, description="Display name of the agent. Output only.")


CHUNK_FIELDS = (
    "text",
    "transcript",
    "blob",
    "payload",
    "image",
    "tool_call",
    "tool_response",
    "agent_transfer",
    "updated_variables",
    "default_variables",
)


class Chunk(ProtoModel):
    """One piece of a message; exactly one member of the ``data`` union is set."""

    text: str | None = Field(None, description="Text said by the user or the agent.")
    transcript: str | None = Field(None, description="Transcript of audio.")
    blob: Blob | None = Field(None, description="A file or audio sent.")
    payload: Struct | None = Field(None, description="Structured data, e.g. an event or a custom payload.")
    image: Image | None = Field(None, description="An image sent.")
    tool_call: ToolCall | None = Field(None, description="A call of a tool by the agent.")
    tool_response: ToolResponse | None = Field(None, description="The response of a tool call.")
    agent_transfer: AgentTransfer | None = Field(None, description="The conversation moved to another agent.")
    updated_variables: Struct | None = Field(None, description="Session variables set in this turn.")
    default_variables: Struct | None = Field(None, description="Variables' default values.")

    @model_validator(mode="after")
    def _one_data_member(self) -> Chunk:
        at_most_one(self, CHUNK_FIELDS, "data")
        return self


class Message(ProtoModel):
    role: str | None = Field(None, description="Role in the conversation, e.g. user, agent.")
    chunks: list[Chunk] | None = Field(None, description="The pieces of the message, in order.")
    event_time: Timestamp | None = Field(None, description="When the message was sent.")


class Span(ProtoModel):
    name: str | None = Field(None, description="Output only. What the span measures: TURN, AGENT, LLM, TOOL, ...")
    start_time: Timestamp | None = Field(None, description="Output only. When the span began.")
    end_time: Timestamp | None = Field(None, description="Output only. When the span ended.")
    duration: Duration | None = Field(None, description="Output only. How long the span took.")
    attributes: Struct | None = Field(None, description="Output only. What the span was about (tool, agent, ...).")
    child_spans: list[Span] | None = Field(None, description="Output only. The spans within this one, in order.")


class Turn(ProtoModel):
    messages: list[Message] | None = None
    root_span: Span | None = None
    user_intended_text: str | None = None


class Conversation(ProtoModel):
    name: str | None = Field(
        None, description="projects/{project}/locations/{location}/apps/{app}/conversations/{conversation}"
    )
    start_time: Timestamp | None = None
    end_time: Timestamp | None = None
    turns: list[Turn] | None = None
    turn_count: int | None = None
    channel_type: ChannelType | None = None
    source: Source | None = None
    input_types: list[InputType] | None = None
    entry_agent: str | None = None
    deployment: str | None = None
    app_version: str | None = None
    language_code: str | None = None
    messages: list[Message] | None = None


class SchemaType(StrEnum):
    TYPE_UNSPECIFIED = "TYPE_UNSPECIFIED"
    STRING = "STRING"
    INTEGER = "INTEGER"
    NUMBER = "NUMBER"
    BOOLEAN = "BOOLEAN"
    OBJECT = "OBJECT"
    ARRAY = "ARRAY"


class Schema(ProtoModel):
    """CES's Schema: the subset of an OpenAPI 3.0 schema object that declares variables and parameters."""

    type: SchemaType | None = Field(None, description="The value's type: STRING, INTEGER, NUMBER, BOOLEAN, OBJECT or ARRAY.")
    title: str | None = Field(None, description="Short title of the value.")
    description: str | None = Field(None, description="What the value means.")
    nullable: bool | None = Field(None, description="Whether null is allowed.")
    default: JsonValue = Field(None, description="Value used when none is given.")
    enum: list[str] | None = Field(None, description="The allowed values, for STRING.")
    properties: dict[str, Schema] | None = Field(None, description="Schemas of an OBJECT's properties, by name.")
    required: list[str] | None = Field(None, description="Properties an OBJECT must have.")
    items: Schema | None = Field(None, description="Schema of an ARRAY's items.")
    any_of: list[Schema] | None = Field(None, description="The value matches at least one of these schemas.")
    minimum: float | None = Field(None, description="Least allowed number.")
    maximum: float | None = Field(None, description="Greatest allowed number.")
    min_items: Int64 | None = Field(None, description="Fewest items of an ARRAY.")
    max_items: Int64 | None = Field(None, description="Most items of an ARRAY.")
    additional_properties: Schema | None = Field(None, description="Schema of an OBJECT's other properties.")

    def to_json_schema(self) -> dict[str, Any]:
        """The same constraints as JSON Schema, the language model providers and validators speak."""
        out: dict[str, Any] = {}
        if self.type not in (None, SchemaType.TYPE_UNSPECIFIED):
            kind = self.type.value.lower()
            out["type"] = [kind, "null"] if self.nullable else kind
        for key in ("title", "description", "enum", "minimum", "maximum", "required"):
            if (value := getattr(self, key)) is not None:
                out[key] = value
        if self.default is not None:
            out["default"] = self.default
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.properties is not None:
            out["properties"] = {name: child.to_json_schema() for name, child in self.properties.items()}
        if self.items is not None:
            out["items"] = self.items.to_json_schema()
        if self.any_of is not None:
            out["anyOf"] = [child.to_json_schema() for child in self.any_of]
        if self.additional_properties is not None:
            out["additionalProperties"] = self.additional_properties.to_json_schema()
        return out


class VariableDeclaration(ProtoModel):
    name: str | None = Field(None, description="Starts with a letter or underscore; letters, digits, underscores.")
    description: str | None = Field(None, description="What the variable holds.")
    schema_: Schema | None = Field(None, alias="schema", description="Type of the variable; schema.default is its start value.")


class ModelSettings(ProtoModel):
    model: str | None = Field(None, description="Model name; the server's configured model when unset.")
    temperature: float | None = Field(None, description="Sampling temperature passed to the model.")


class LanguageSettings(ProtoModel):
    default_language_code: str | None = Field(None, description="BCP-47 code recorded on conversations, e.g. en-US.")


class TimeZoneSettings(ProtoModel):
    time_zone: str | None = Field(None, description="IANA time zone, e.g. Europe/Paris.")


class EvaluationToolCallBehaviour(StrEnum):
    EVALUATION_TOOL_CALL_BEHAVIOUR_UNSPECIFIED = "EVALUATION_TOOL_CALL_BEHAVIOUR_UNSPECIFIED"
    REAL = "REAL"
    FAKE = "FAKE"


class GoldenRunMethod(StrEnum):
    GOLDEN_RUN_METHOD_UNSPECIFIED = "GOLDEN_RUN_METHOD_UNSPECIFIED"
    STABLE = "STABLE"
    NAIVE = "NAIVE"


class ScenarioConversationInitiator(StrEnum):
    SCENARIO_CONVERSATION_INITIATOR_UNSPECIFIED = "SCENARIO_CONVERSATION_INITIATOR_UNSPECIFIED"
    USER = "USER"
    AGENT = "AGENT"


class EvaluationSettings(ProtoModel):
    scenario_conversation_initiator: ScenarioConversationInitiator | None = Field(
        None, description="Who starts a scenario evaluation's conversation: USER (the default) or AGENT (the "
                          "session opens with the event \"welcome\" before the simulated user speaks).")
    golden_run_method: GoldenRunMethod | None = Field(
        None, description="The golden run method when run_evaluation names none: STABLE (the default) or NAIVE.")
    golden_evaluation_tool_call_behaviour: EvaluationToolCallBehaviour | None = Field(
        None, description="The default tool call behaviour of golden evaluations: REAL (the default) or FAKE.")
    scenario_evaluation_tool_call_behaviour: EvaluationToolCallBehaviour | None = Field(
        None, description="The default tool call behaviour of scenario evaluations: REAL (the default) or FAKE.")


class App(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}")
    display_name: str | None = Field(None, description="Human-readable name of the app.")
    description: str | None = Field(None, description="What the app is for.")
    root_agent: str | None = Field(
        None, description="The agent sessions start with: projects/{project}/locations/{location}/apps/{app}/agents/{agent}"
    )
    variable_declarations: list[VariableDeclaration] | None = Field(None, description="Variables sessions carry.")
    global_instruction: str | None = Field(None, description="Instruction given to every llm agent of the app.")
    model_settings: ModelSettings | None = Field(None, description="Model used by llm agents that name none.")
    language_settings: LanguageSettings | None = Field(None, description="Language recorded on the app's conversations.")
    time_zone_settings: TimeZoneSettings | None = Field(None, description="Time zone of the app's users.")
    guardrails: list[str] | None = Field(
        None, description="Guardrails checked for every agent of the app, before the agent's own: "
                          "projects/{project}/locations/{location}/apps/{app}/guardrails/{guardrail}"
    )
    evaluation_settings: EvaluationSettings | None = Field(None, description="How the app's evaluations run.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Checksum for optimistic concurrency on update and delete.")


PageSize = Annotated[int | None, Field(description="Maximum items to return; 0 or unset means the default.")]
PageToken = Annotated[str | None, Field(description="nextPageToken from the previous call with the same arguments.")]
