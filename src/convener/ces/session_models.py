"""Wire models of SessionService.RunSession, field for field as in CES (SessionInput as in seed 001)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from convener.api.protojson import Bytes, ProtoModel, Struct
from convener.ces.models import Blob, Image, Message, Source, Span, ToolCall, ToolResponse, at_most_one


class RecordingControl(StrEnum):
    RECORDING_CONTROL_UNSPECIFIED = "RECORDING_CONTROL_UNSPECIFIED"
    RECORDING_ENABLED = "RECORDING_ENABLED"
    RECORDING_DISABLED = "RECORDING_DISABLED"


class ToolResponses(ProtoModel):
    tool_responses: list[ToolResponse] | None = Field(None, description="Responses to the client tool calls of the last turn, matched by id.")


class ToolCalls(ProtoModel):
    tool_calls: list[ToolCall] | None = None


class Event(ProtoModel):
    event: str | None = Field(None, description="Required. The name of the event.")
    variables: Struct | None = Field(None, description="Variables that come with the event.")


INPUT_FIELDS = ("text", "dtmf", "audio", "tool_responses", "image", "blob", "variables", "event")


class SessionInput(ProtoModel):
    will_continue: bool | None = Field(None, description="More of this input follows in the next input.")
    recording_control: RecordingControl | None = Field(None, description="Whether the conversation may be recorded from now on.")
    text: str | None = Field(None, description="Text from the end user.")
    dtmf: str | None = Field(None, description="DTMF digits from the end user.")
    audio: Bytes | None = Field(None, description="Audio from the end user, base64.")
    tool_responses: ToolResponses | None = Field(None, description="Results of client tool calls.")
    image: Image | None = Field(None, description="An image from the end user.")
    blob: Blob | None = Field(None, description="A file from the end user.")
    variables: Struct | None = Field(None, description="Session variables to set, by name.")
    event: Event | None = Field(None, description="An event, e.g. welcome.")

    @model_validator(mode="after")
    def _one_input(self) -> SessionInput:
        at_most_one(self, INPUT_FIELDS, "input_type")
        return self

    @property
    def kind(self) -> str | None:
        return next((name for name in INPUT_FIELDS if getattr(self, name) is not None), None)


class SessionConfig(ProtoModel):
    session: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/sessions/{session}")
    entry_agent: str | None = Field(None, description="Agent the session starts with; the app's rootAgent when unset.")
    deployment: str | None = Field(
        None, description="…/apps/{app}/deployments/{deployment}: a new session runs the deployment's appVersion "
                          "as it is now, kept for the session's later turns; recorded on the conversation.")
    app_version: str | None = Field(
        None, description="Convener extension. The version to run (…/apps/{app}/versions/{version}); the draft when unset."
    )
    time_zone: str | None = Field(None, description="IANA time zone of the user.")
    historical_contexts: list[Message] | None = Field(
        None, description="Messages to start a new session from, instead of an empty history."
    )
    source: Source | None = Field(
        None, description="Convener extension. Source recorded on the conversation; LIVE when unset."
    )


class RunSessionRequest(ProtoModel):
    config: SessionConfig = Field(description="Required. The session and how to run it.")
    inputs: list[SessionInput] = Field(description="Required. Inputs of this turn, in order.")


class EndSession(ProtoModel):
    metadata: Struct | None = None


class DiagnosticInfo(ProtoModel):
    messages: list[Message] | None = None
    root_span: Span | None = None


class SessionOutput(ProtoModel):
    text: str | None = None
    audio: Bytes | None = None
    tool_calls: ToolCalls | None = None
    end_session: EndSession | None = None
    payload: Struct | None = None
    turn_index: int | None = Field(None, description="The turn this output belongs to, from 1.")
    turn_completed: bool | None = None
    diagnostic_info: DiagnosticInfo | None = Field(None, description="On the last output of a turn.")


class RunSessionResponse(ProtoModel):
    outputs: list[SessionOutput] | None = None
