"""Wire models of the ces service, field for field as in Google's CES reference (seed 000).

Every field is optional in the model so that proto3's "unset" can be told apart from a default;
``ProtoModel.to_json`` omits what is unset. Output-only fields are filled in by the service.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, model_validator

from convener.api.protojson import Bytes, Duration, ProtoModel, Struct, Timestamp


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


def _at_most_one(model: ProtoModel, fields: tuple[str, ...], union: str) -> None:
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
        _at_most_one(self, ("tool", "toolset_tool"), "tool_identifier")
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

    text: str | None = None
    transcript: str | None = None
    blob: Blob | None = None
    payload: Struct | None = None
    image: Image | None = None
    tool_call: ToolCall | None = None
    tool_response: ToolResponse | None = None
    agent_transfer: AgentTransfer | None = None
    updated_variables: Struct | None = None
    default_variables: Struct | None = None

    @model_validator(mode="after")
    def _one_data_member(self) -> Chunk:
        _at_most_one(self, CHUNK_FIELDS, "data")
        return self


class Message(ProtoModel):
    role: str | None = Field(None, description="Role in the conversation, e.g. user, agent.")
    chunks: list[Chunk] | None = None
    event_time: Timestamp | None = None


class Span(ProtoModel):
    name: str | None = None
    start_time: Timestamp | None = None
    end_time: Timestamp | None = None
    duration: Duration | None = None
    attributes: Struct | None = None
    child_spans: list[Span] | None = None


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


class App(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}")
    display_name: str | None = Field(None, description="Human-readable name of the app.")
    description: str | None = Field(None, description="What the app is for.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    update_time: Timestamp | None = Field(None, description="Output only.")
    etag: str | None = Field(None, description="Checksum for optimistic concurrency on update and delete.")


PageSize = Annotated[int | None, Field(description="Maximum items to return; 0 or unset means the default.")]
PageToken = Annotated[str | None, Field(description="nextPageToken from the previous call with the same arguments.")]
