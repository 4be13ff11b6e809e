"""Output-only fields of a conversation, derived from what it records and never trusted from input.

``settle`` takes a conversation as a client or an importer gave it and returns the one we store:
turn count, input types, channel type, start/end times and span durations are computed, and the
resource references are checked to lie under the conversation's own app.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from convener.api.errors import InvalidArgument
from convener.api.names import ID_PATTERN
from convener.api.protojson import Timestamp
from convener.ces.models import ChannelType, Chunk, Conversation, InputType, Message, Source, Span, Turn
from convener.ces.names import ConversationName

MAX_SPAN_DEPTH = 64
LANGUAGE_CODE = re.compile(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8}){0,6}")
USER_ROLES = frozenset({"user", "end-user", "end_user", "human", "customer"})


def _input_types_of(chunk: Chunk) -> InputType | None:
    """What kind of end-user input a chunk is, if it is one."""
    if chunk.text is not None:
        return InputType.INPUT_TYPE_TEXT
    if chunk.transcript is not None:
        return InputType.INPUT_TYPE_AUDIO
    if chunk.blob is not None:
        audio = (chunk.blob.mime_type or "").startswith("audio/")
        return InputType.INPUT_TYPE_AUDIO if audio else InputType.INPUT_TYPE_BLOB
    if chunk.image is not None:
        return InputType.INPUT_TYPE_IMAGE
    if chunk.tool_response is not None:
        return InputType.INPUT_TYPE_TOOL_RESPONSE
    if chunk.updated_variables is not None:
        return InputType.INPUT_TYPE_VARIABLES
    if chunk.payload is not None:
        # A session event (SessionInput.event) reaches a recording as a payload chunk from the user.
        return InputType.INPUT_TYPE_EVENT
    return None


def _all_messages(conversation: Conversation) -> Iterator[Message]:
    for turn in conversation.turns or ():
        yield from turn.messages or ()
    yield from conversation.messages or ()


def _user_input_types(messages: Iterable[Message]) -> set[InputType]:
    return {
        kind
        for message in messages
        if (message.role or "").lower() in USER_ROLES
        for chunk in message.chunks or ()
        if (kind := _input_types_of(chunk)) is not None
    }


def input_types(conversation: Conversation) -> list[InputType]:
    found = _user_input_types(_all_messages(conversation))
    return [kind for kind in InputType if kind in found]


def channel_type(kinds: list[InputType]) -> ChannelType:
    if InputType.INPUT_TYPE_AUDIO in kinds:
        return ChannelType.AUDIO
    if InputType.INPUT_TYPE_IMAGE in kinds or InputType.INPUT_TYPE_BLOB in kinds:
        return ChannelType.MULTIMODAL
    return ChannelType.TEXT


def _settle_span(span: Span, path: str, depth: int) -> Span:
    if depth > MAX_SPAN_DEPTH:
        raise InvalidArgument(f"{path}: spans are nested deeper than {MAX_SPAN_DEPTH} levels")
    if span.start_time is not None and span.end_time is not None and span.end_time < span.start_time:
        raise InvalidArgument(f"{path}: endTime is before startTime")
    duration = span.end_time - span.start_time if span.start_time and span.end_time else None
    children = [
        _settle_span(child, f"{path}.childSpans[{index}]", depth + 1) for index, child in enumerate(span.child_spans or ())
    ]
    return span.model_copy(update={"duration": duration, "child_spans": children or None})


def _span_times(span: Span) -> Iterator[Timestamp]:
    stack = [span]
    while stack:
        current = stack.pop()
        yield from (t for t in (current.start_time, current.end_time) if t is not None)
        stack.extend(current.child_spans or ())


def _moments(conversation: Conversation) -> list[Timestamp]:
    moments = [m.event_time for m in _all_messages(conversation) if m.event_time is not None]
    for turn in conversation.turns or ():
        if turn.root_span is not None:
            moments.extend(_span_times(turn.root_span))
    return moments


def _check_reference(value: str | None, field: str, name: ConversationName, collection: str) -> None:
    if not value:
        return
    prefix = f"{name.app_name}/{collection}/"
    rest = value[len(prefix) :] if value.startswith(prefix) else ""
    if not ID_PATTERN.fullmatch(rest):
        raise InvalidArgument(f'{field} "{value[:200]}" must be a resource under the app: {prefix}{{id}}')


def settle(conversation: Conversation, name: ConversationName, *, received: Timestamp) -> Conversation:
    """The conversation as stored: output-only fields derived, references checked."""
    _check_reference(conversation.entry_agent, "entryAgent", name, "agents")
    _check_reference(conversation.deployment, "deployment", name, "deployments")
    _check_reference(conversation.app_version, "appVersion", name, "versions")
    if conversation.language_code and not LANGUAGE_CODE.fullmatch(conversation.language_code):
        raise InvalidArgument(f'languageCode "{conversation.language_code[:40]}" is not a BCP-47 language tag')
    turns = [
        turn.model_copy(
            update={"root_span": _settle_span(turn.root_span, f"turns[{index}].rootSpan", 1) if turn.root_span else None}
        )
        for index, turn in enumerate(conversation.turns or ())
    ]
    moments = _moments(conversation)
    start = conversation.start_time or (min(moments) if moments else received)
    end = conversation.end_time or (max(moments) if moments else None)
    if end is not None and end < start:
        raise InvalidArgument("endTime is before startTime")
    kinds = input_types(conversation)
    source = conversation.source if conversation.source not in (None, Source.SOURCE_UNSPECIFIED) else Source.LIVE
    return conversation.model_copy(
        update={
            "name": str(name),
            "turns": turns or None,
            "turn_count": len(turns),
            "input_types": kinds or None,
            "channel_type": channel_type(kinds),
            "source": source,
            "start_time": start,
            "end_time": end,
        }
    )


def settle_appended(header: Conversation, turn: Turn, *, end_time: Timestamp | None) -> tuple[Conversation, Turn]:
    """A settled conversation's header with ``turn`` appended, and the turn as stored, in O(1) of the turns
    recorded before: what ``settle`` derives from every turn is updated from the new one alone (``header``
    is a header as stored: settled, without its turns). ``end_time`` is the conversation's new end, when known.
    """
    index = header.turn_count or 0
    settled = turn.model_copy(
        update={"root_span": _settle_span(turn.root_span, f"turns[{index}].rootSpan", 1) if turn.root_span else None}
    )
    if end_time is None:
        moments = [m.event_time for m in turn.messages or () if m.event_time is not None]
        if turn.root_span is not None:
            moments.extend(_span_times(turn.root_span))
        if header.end_time is not None:
            moments.append(header.end_time)
        end_time = max(moments) if moments else None
    assert header.start_time is not None  # a stored header is settled
    if end_time is not None and end_time < header.start_time:
        raise InvalidArgument("endTime is before startTime")
    found = set(header.input_types or ()) | _user_input_types(turn.messages or ())
    kinds = [kind for kind in InputType if kind in found]
    updated = header.model_copy(
        update={
            "turn_count": index + 1,
            "input_types": kinds or None,
            "channel_type": channel_type(kinds),
            "end_time": end_time,
        }
    )
    return updated, settled
