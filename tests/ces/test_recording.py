"""settle(): the output-only fields of a conversation, derived from what it records."""

from __future__ import annotations

from typing import Any

import pytest

from convener.api.errors import InvalidArgument
from convener.api.protojson import Duration, Timestamp
from convener.ces.models import ChannelType, Conversation, InputType, Source
from convener.ces.names import ConversationName
from convener.ces.recording import MAX_SPAN_DEPTH, settle

APP = "projects/p/locations/l/apps/a"
NAME = ConversationName.parse(f"{APP}/conversations/c")
RECEIVED = Timestamp.parse("2030-01-01T00:00:00Z")


def settled(data: dict[str, Any]) -> Conversation:
    return settle(Conversation.model_validate(data), NAME, received=RECEIVED)


def rejected(data: dict[str, Any]) -> str:
    with pytest.raises(InvalidArgument) as caught:
        settled(data)
    return caught.value.message


def from_user(*chunks: dict[str, Any], role: str = "user") -> dict[str, Any]:
    return {"turns": [{"messages": [{"role": role, "chunks": list(chunks)}]}]}


AUDIO_BLOB = {"blob": {"mimeType": "audio/wav", "data": "AAAA"}}
PDF_BLOB = {"blob": {"mimeType": "application/pdf", "data": "AAAA"}}
UNTYPED_BLOB = {"blob": {"data": "AAAA"}}
IMAGE = {"image": {"mimeType": "image/png", "data": "AAAA", "altText": "a cat"}}
TOOL_RESPONSE = {"toolResponse": {"id": "1", "response": {"output": 42}}}
TOOL_CALL = {"toolCall": {"id": "1", "args": {}}}
TRANSFER = {"agentTransfer": {"targetAgent": f"{APP}/agents/b"}}


# --- input types and channel type ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk", "kind", "channel"),
    [
        ({"text": "hello"}, InputType.INPUT_TYPE_TEXT, ChannelType.TEXT),
        ({"text": ""}, InputType.INPUT_TYPE_TEXT, ChannelType.TEXT),
        ({"transcript": "hello"}, InputType.INPUT_TYPE_AUDIO, ChannelType.AUDIO),
        (AUDIO_BLOB, InputType.INPUT_TYPE_AUDIO, ChannelType.AUDIO),
        ({"blob": {"mimeType": "audio/L16;rate=16000", "data": ""}}, InputType.INPUT_TYPE_AUDIO, ChannelType.AUDIO),
        (PDF_BLOB, InputType.INPUT_TYPE_BLOB, ChannelType.MULTIMODAL),
        (UNTYPED_BLOB, InputType.INPUT_TYPE_BLOB, ChannelType.MULTIMODAL),
        (IMAGE, InputType.INPUT_TYPE_IMAGE, ChannelType.MULTIMODAL),
        (TOOL_RESPONSE, InputType.INPUT_TYPE_TOOL_RESPONSE, ChannelType.TEXT),
        ({"updatedVariables": {"x": 1}}, InputType.INPUT_TYPE_VARIABLES, ChannelType.TEXT),
        ({"updatedVariables": {}}, InputType.INPUT_TYPE_VARIABLES, ChannelType.TEXT),
        ({"payload": {"event": "welcome"}}, InputType.INPUT_TYPE_EVENT, ChannelType.TEXT),
    ],
)
def test_each_kind_of_user_chunk_is_an_input_type(chunk: dict[str, Any], kind: InputType, channel: ChannelType) -> None:
    conversation = settled(from_user(chunk))
    assert conversation.input_types == [kind]
    assert conversation.channel_type is channel


@pytest.mark.parametrize("chunk", [TOOL_CALL, TRANSFER, {"defaultVariables": {"x": 1}}, {}])
def test_chunks_that_are_not_user_input_give_no_input_type(chunk: dict[str, Any]) -> None:
    conversation = settled(from_user(chunk))
    assert conversation.input_types is None
    assert conversation.channel_type is ChannelType.TEXT
    assert "inputTypes" not in conversation.to_json()


@pytest.mark.parametrize("role", ["agent", "model", "assistant", "system", "tool", "", None])
def test_chunks_of_other_roles_are_not_input(role: str | None) -> None:
    data = {"turns": [{"messages": [{"role": role, "chunks": [{"text": "hi"}, AUDIO_BLOB, IMAGE]}]}]}
    conversation = settled(data)
    assert conversation.input_types is None
    assert conversation.channel_type is ChannelType.TEXT


@pytest.mark.parametrize("role", ["user", "USER", "User", "end-user", "end_user", "human", "customer"])
def test_user_roles_are_recognised_in_any_case(role: str) -> None:
    assert settled(from_user({"text": "hi"}, role=role)).input_types == [InputType.INPUT_TYPE_TEXT]


def test_input_types_are_collected_across_turns_once_each_in_enum_order() -> None:
    data = {
        "turns": [
            {"messages": [{"role": "user", "chunks": [IMAGE, {"text": "a"}]}, {"role": "agent", "chunks": [PDF_BLOB]}]},
            {"messages": [{"role": "user", "chunks": [{"payload": {}}, {"text": "b"}, TOOL_RESPONSE]}]},
            {"messages": [{"role": "user", "chunks": [{"updatedVariables": {"v": True}}, {"transcript": "c"}]}]},
        ]
    }
    conversation = settled(data)
    assert conversation.input_types == [
        InputType.INPUT_TYPE_TEXT,
        InputType.INPUT_TYPE_EVENT,
        InputType.INPUT_TYPE_AUDIO,
        InputType.INPUT_TYPE_IMAGE,
        InputType.INPUT_TYPE_TOOL_RESPONSE,
        InputType.INPUT_TYPE_VARIABLES,
    ]
    assert conversation.to_json()["inputTypes"] == [
        "INPUT_TYPE_TEXT",
        "INPUT_TYPE_EVENT",
        "INPUT_TYPE_AUDIO",
        "INPUT_TYPE_IMAGE",
        "INPUT_TYPE_TOOL_RESPONSE",
        "INPUT_TYPE_VARIABLES",
    ]


def test_the_deprecated_messages_field_counts_as_input_too() -> None:
    conversation = settled({"messages": [{"role": "user", "chunks": [IMAGE]}]})
    assert conversation.input_types == [InputType.INPUT_TYPE_IMAGE]
    assert conversation.turn_count == 0


@pytest.mark.parametrize(
    ("chunks", "channel"),
    [
        ([{"text": "a"}, IMAGE, AUDIO_BLOB], ChannelType.AUDIO),
        ([{"text": "a"}, {"transcript": "b"}], ChannelType.AUDIO),
        ([{"text": "a"}, IMAGE], ChannelType.MULTIMODAL),
        ([{"text": "a"}, PDF_BLOB], ChannelType.MULTIMODAL),
        ([{"text": "a"}, TOOL_RESPONSE, {"payload": {}}], ChannelType.TEXT),
    ],
)
def test_channel_type_is_audio_over_multimodal_over_text(chunks: list[dict[str, Any]], channel: ChannelType) -> None:
    assert settled(from_user(*chunks)).channel_type is channel


def test_claimed_output_only_fields_are_replaced() -> None:
    data = {
        **from_user({"text": "hi"}),
        "turnCount": 99,
        "inputTypes": ["INPUT_TYPE_IMAGE", "INPUT_TYPE_AUDIO"],
        "channelType": "MULTIMODAL",
        "name": f"{APP}/conversations/somebody-else",
    }
    conversation = settled(data)
    assert conversation.turn_count == 1
    assert conversation.input_types == [InputType.INPUT_TYPE_TEXT]
    assert conversation.channel_type is ChannelType.TEXT
    assert conversation.name == str(NAME)


def test_a_conversation_without_turns_has_turn_count_zero_and_no_turns() -> None:
    conversation = settled({})
    assert conversation.turn_count == 0
    assert conversation.turns is None
    assert conversation.to_json() == {
        "name": str(NAME),
        "startTime": str(RECEIVED),
        "turnCount": 0,
        "channelType": "TEXT",
        "source": "LIVE",
    }


def test_turn_count_is_the_number_of_turns() -> None:
    assert settled({"turns": [{}, {"messages": []}, {"userIntendedText": "x"}]}).turn_count == 3


@pytest.mark.parametrize(
    ("given", "stored"),
    [(None, Source.LIVE), ("SOURCE_UNSPECIFIED", Source.LIVE), ("LIVE", Source.LIVE), ("EVAL", Source.EVAL),
     ("SIMULATOR", Source.SIMULATOR), ("AGENT_TOOL", Source.AGENT_TOOL)],
)
def test_source_defaults_to_live(given: str | None, stored: Source) -> None:
    assert settled({"source": given}).source is stored


def test_settle_does_not_change_its_input() -> None:
    original = Conversation.model_validate({**from_user({"text": "hi"}), "turnCount": 7})
    before = original.to_json()
    settle(original, NAME, received=RECEIVED)
    assert original.to_json() == before


# --- times and spans ----------------------------------------------------------------------------


def span(name: str, start: str | None = None, end: str | None = None, *children: dict[str, Any], **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"name": name, **extra}
    if start:
        data["startTime"] = start
    if end:
        data["endTime"] = end
    if children:
        data["childSpans"] = list(children)
    return data


def test_start_and_end_come_from_the_earliest_and_latest_message() -> None:
    data = {
        "turns": [
            {"messages": [{"role": "user", "eventTime": "2024-01-01T10:00:05Z"},
                          {"role": "agent", "eventTime": "2024-01-01T10:00:01+00:00"}]},
            {"messages": [{"role": "user"}, {"role": "agent", "eventTime": "2024-01-01T12:00:09.5+02:00"}]},
        ]
    }
    conversation = settled(data)
    assert str(conversation.start_time) == "2024-01-01T10:00:01Z"
    assert str(conversation.end_time) == "2024-01-01T10:00:09.500Z"


def test_start_and_end_come_from_spans_at_any_depth_too() -> None:
    data = {
        "turns": [
            {
                "messages": [{"role": "user", "eventTime": "2024-01-01T10:00:05Z"}],
                "rootSpan": span(
                    "root", "2024-01-01T10:00:04Z", "2024-01-01T10:00:06Z",
                    span("child", None, None, span("grandchild", "2024-01-01T09:59:59Z", "2024-01-01T10:00:30Z")),
                ),
            }
        ]
    }
    conversation = settled(data)
    assert str(conversation.start_time) == "2024-01-01T09:59:59Z"
    assert str(conversation.end_time) == "2024-01-01T10:00:30Z"


def test_the_deprecated_messages_give_times_too() -> None:
    conversation = settled({"messages": [{"role": "user", "eventTime": "2024-05-05T05:05:05Z"}]})
    assert str(conversation.start_time) == str(conversation.end_time) == "2024-05-05T05:05:05Z"


def test_given_start_and_end_times_are_kept() -> None:
    data = {
        "startTime": "2024-01-01T00:00:00Z",
        "endTime": "2024-01-02T00:00:00Z",
        "turns": [{"messages": [{"role": "user", "eventTime": "2024-01-01T10:00:00Z"}]}],
    }
    conversation = settled(data)
    assert str(conversation.start_time) == "2024-01-01T00:00:00Z"
    assert str(conversation.end_time) == "2024-01-02T00:00:00Z"


def test_a_conversation_with_no_times_starts_when_received_and_has_no_end() -> None:
    conversation = settled(from_user({"text": "hi"}))
    assert conversation.start_time == RECEIVED
    assert conversation.end_time is None


def test_end_before_start_is_rejected() -> None:
    message = rejected({"startTime": "2024-01-02T00:00:00Z", "endTime": "2024-01-01T00:00:00Z"})
    assert message == "endTime is before startTime"
    message = rejected(
        {"endTime": "2024-01-01T00:00:00Z", "turns": [{"messages": [{"eventTime": "2024-01-01T00:00:01Z"}]}]}
    )
    assert message == "endTime is before startTime"


def test_equal_start_and_end_are_fine() -> None:
    conversation = settled({"startTime": "2024-01-01T00:00:00Z", "endTime": "2024-01-01T00:00:00Z"})
    assert conversation.start_time == conversation.end_time


def test_span_durations_are_computed_at_every_depth_and_claims_are_ignored() -> None:
    root = span(
        "root", "2024-01-01T10:00:00Z", "2024-01-01T10:00:10Z",
        span("a", "2024-01-01T10:00:01Z", "2024-01-01T10:00:02.5Z", duration="999s"),
        span(
            "b", "2024-01-01T10:00:03Z", "2024-01-01T10:00:09.000000001Z",
            span("b1", "2024-01-01T10:00:04Z", None, duration="999s"),
            span("b2", None, "2024-01-01T10:00:05Z", duration="1s"),
            span("b3", "2024-01-01T10:00:05Z", "2024-01-01T10:00:05Z"),
        ),
        duration="1s",
    )
    settled_root = settled({"turns": [{"rootSpan": root}]}).to_json()["turns"][0]["rootSpan"]
    assert settled_root["duration"] == "10s"
    a, b = settled_root["childSpans"]
    assert a["duration"] == "1.500s"
    assert b["duration"] == "6.000000001s"
    b1, b2, b3 = b["childSpans"]
    assert "duration" not in b1
    assert "duration" not in b2
    assert b3["duration"] == "0s"
    assert [s["name"] for s in (a, b, b1, b2, b3)] == ["a", "b", "b1", "b2", "b3"]


def test_span_attributes_are_kept_as_they_are() -> None:
    attributes = {"model": "x", "tokens": 12, "empty": [], "nested": {}, "none": None}
    root = span("root", "2024-01-01T10:00:00Z", "2024-01-01T10:00:01Z", attributes=attributes)
    stored = settled({"turns": [{"rootSpan": root}]}).to_json()["turns"][0]["rootSpan"]
    assert stored["attributes"] == attributes


def test_a_span_ending_before_it_starts_is_rejected_with_its_path() -> None:
    root = span(
        "root", "2024-01-01T10:00:00Z", "2024-01-01T10:00:10Z",
        span("ok", "2024-01-01T10:00:01Z", "2024-01-01T10:00:02Z"),
        span("bad", "2024-01-01T10:00:05Z", "2024-01-01T10:00:04Z"),
    )
    message = rejected({"turns": [{}, {"rootSpan": root}]})
    assert message == "turns[1].rootSpan.childSpans[1]: endTime is before startTime"


def nested(depth: int) -> dict[str, Any]:
    """A chain of ``depth`` spans, the root included."""
    current: dict[str, Any] = {"name": f"s{depth}"}
    for level in range(depth - 1, 0, -1):
        current = {"name": f"s{level}", "childSpans": [current]}
    return current


def test_spans_may_nest_up_to_the_limit() -> None:
    conversation = settled({"turns": [{"rootSpan": nested(MAX_SPAN_DEPTH)}]})
    depth, current = 1, conversation.turns[0].root_span  # type: ignore[index]
    while current is not None and current.child_spans:
        depth, current = depth + 1, current.child_spans[0]
    assert depth == MAX_SPAN_DEPTH


@pytest.mark.parametrize("depth", [MAX_SPAN_DEPTH + 1, 100])
def test_spans_nested_deeper_than_the_limit_are_rejected(depth: int) -> None:
    message = rejected({"turns": [{"rootSpan": nested(depth)}]})
    assert message.startswith("turns[0].rootSpan" + ".childSpans[0]" * MAX_SPAN_DEPTH + ":")
    assert message.endswith(f"spans are nested deeper than {MAX_SPAN_DEPTH} levels")


def test_times_in_other_offsets_are_compared_as_instants() -> None:
    # 10:00+02:00 is 08:00Z, before 09:00Z.
    data = {"turns": [{"messages": [{"eventTime": "2024-01-01T09:00:00Z"}, {"eventTime": "2024-01-01T10:00:00+02:00"}]}]}
    conversation = settled(data)
    assert str(conversation.start_time) == "2024-01-01T08:00:00Z"
    assert str(conversation.end_time) == "2024-01-01T09:00:00Z"
    assert conversation.end_time - conversation.start_time == Duration.from_seconds(3600)  # type: ignore[operator]


# --- references and language -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "collection"),
    [("entryAgent", "agents"), ("deployment", "deployments"), ("appVersion", "versions")],
)
def test_references_under_the_app_are_kept(field: str, collection: str) -> None:
    value = f"{APP}/{collection}/x-1"
    assert settled({field: value}).to_json()[field] == value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("entryAgent", "projects/p/locations/l/apps/other/agents/x"),
        ("entryAgent", "projects/q/locations/l/apps/a/agents/x"),
        ("entryAgent", "projects/p/locations/m/apps/a/agents/x"),
        ("entryAgent", f"{APP}/agents/"),
        ("entryAgent", f"{APP}/agents/x/y"),
        ("entryAgent", f"{APP}/agents/-x"),
        ("entryAgent", f"{APP}/tools/x"),
        ("entryAgent", "x"),
        ("entryAgent", f"{APP}2/agents/x"),
        ("deployment", f"{APP}/versions/x"),
        ("deployment", "projects/p/locations/l/apps/b/deployments/x"),
        ("appVersion", f"{APP}/deployments/x"),
        ("appVersion", "projects/p/locations/l/apps/b/versions/x"),
    ],
)
def test_references_outside_the_app_are_rejected(field: str, value: str) -> None:
    message = rejected({field: value})
    assert message.startswith(f'{field} "')
    assert "must be a resource under the app: projects/p/locations/l/apps/a/" in message


@pytest.mark.parametrize("field", ["entryAgent", "deployment", "appVersion"])
def test_empty_references_are_accepted(field: str) -> None:
    assert settled({field: ""}).to_json()[field] == ""


@pytest.mark.parametrize("code", ["en", "en-US", "es-419", "zh-Hant-TW", "sr-Latn-RS", "de-CH-1996", "fil"])
def test_bcp47_language_codes_are_accepted(code: str) -> None:
    assert settled({"languageCode": code}).language_code == code


@pytest.mark.parametrize("code", ["e", "english!", "en_US", "en-", "-en", "en US", "123", "en--US", "x" * 9, "日本語"])
def test_other_language_codes_are_rejected(code: str) -> None:
    assert rejected({"languageCode": code}).endswith("is not a BCP-47 language tag")


def test_a_language_code_ending_in_a_newline_is_rejected() -> None:
    rejected({"languageCode": "en\n"})
